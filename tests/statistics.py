#!/usr/bin/env python3
"""Statistics of series against pandas (run by tests/statistics.rs).

usage: statistics.py BASE_URL            statistics of series
       statistics.py BASE_URL --derived [YEARS COMPLETE YEAR_START ZONE]
                                         derived characteristic values made with these settings
                                         (default 3 0.9 11 UTC; a dataset of 3+ years)

On generated series (two years from 2023-01-01: the leap day of 2024, DST changes, gaps):
day-of-year and month-of-year normals (daily or monthly means in the zone, then across the
years), annual values of hydrological years in a fixed offset, duration curves (numpy's linear
quantiles), `minCoverage` and a reference period, each computed by pandas from the raw values
the server sends; then the many-series answer equal to the single-series ones, and the CSV and
Parquet answers equal to the JSON one.
"""
import io
import json
import math
import sys
import urllib.parse
import urllib.request

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

BASE = sys.argv[1]
STEP = pd.Timedelta(minutes=15)


def fetch(path):
    with urllib.request.urlopen(BASE + path) as r:
        return r.read()


def query(**params):
    return urllib.parse.urlencode(params, safe=",/:")


def statistics(series, **params):
    station, parameter = series
    return json.loads(fetch(f"/stations/{station}/parameters/{parameter}/statistics?{query(**params)}"))["data"]


def raw(series, **params):
    station, parameter = series
    csv = fetch(f"/stations/{station}/parameters/{parameter}/values?format=csv&{query(**params)}")
    frame = pd.read_csv(io.BytesIO(csv))
    index = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
    return pd.Series(frame["value"].to_numpy(), index=index)


def close(a, b, what):
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        ok = a is None and (b is None or math.isnan(b))
    elif isinstance(a, str):
        ok = pd.Timestamp(a) == pd.Timestamp(b)
    else:
        ok = math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    assert ok, f"{what}: server {a!r}, pandas {b!r}"


def daily_means(values, tz, min_coverage=0.0):
    local = values.tz_convert(tz)
    r = local.resample("D")
    means, counts = r.mean(), r.count()
    # A local day's expected values: its length (23, 24 or 25 hours) over the step.
    starts = means.index
    lengths = pd.Series([(s + pd.DateOffset(days=1)) - s for s in starts], index=starts)
    coverage = counts / (lengths / STEP)
    kept = (counts > 0) & (coverage >= min_coverage)
    return means[kept]


def check_day_of_year(series, values):
    tz = "Europe/Berlin"
    got = statistics(series, type="dayOfYear", aggregate="mean,p10,max,count", timeZone=tz)
    means = daily_means(values, tz)
    groups = means.groupby([means.index.month, means.index.day])
    want = pd.DataFrame({"mean": groups.mean(), "p10": groups.quantile(0.1), "max": groups.max(),
                         "years": groups.count()})
    assert len(got) == len(want) == 366, (len(got), len(want))
    for row, ((month, day), w) in zip(got, want.iterrows()):
        assert (row["month"], row["day"]) == (month, day), (row, month, day)
        for name in ("mean", "p10", "max"):
            close(row[name], w[name], f"dayOfYear {month}-{day} {name}")
        assert row["years"] == row["count"] == w["years"], (row, w)
    leap = [r for r in got if (r["month"], r["day"]) == (2, 29)]
    assert leap and leap[0]["years"] == 1, leap
    # Thin days count for nothing: with minCoverage, fewer years stand behind some days.
    thin = statistics(series, type="dayOfYear", timeZone=tz, minCoverage="0.99")
    means = daily_means(values, tz, 0.99)
    groups = means.groupby([means.index.month, means.index.day])
    want = groups.mean()
    assert len(thin) == len(want), (len(thin), len(want))
    for row, ((month, day), w) in zip(thin, want.items()):
        assert (row["month"], row["day"]) == (month, day)
        close(row["mean"], w, f"dayOfYear minCoverage {month}-{day}")
    assert sum(r["years"] for r in thin) < sum(r["years"] for r in got)
    print(f"dayOfYear: {len(got)} days, minCoverage leaves {sum(r['years'] for r in thin)} day means")


def check_month_of_year(series, values):
    tz = "America/New_York"
    got = statistics(series, type="monthOfYear", aggregate="mean,min,median", timeZone=tz)
    monthly = values.tz_convert(tz).resample("MS").mean().dropna()
    groups = monthly.groupby(monthly.index.month)
    want = pd.DataFrame({"mean": groups.mean(), "min": groups.min(), "median": groups.median(),
                         "years": groups.count()})
    assert len(got) == len(want) == 12
    for row, (month, w) in zip(got, want.iterrows()):
        assert row["month"] == month
        for name in ("mean", "min", "median"):
            close(row[name], w[name], f"monthOfYear {month} {name}")
        assert row["years"] == w["years"]
    print(f"monthOfYear: 12 months in {tz}")


def check_annual(series, values):
    tz = "Etc/GMT-1"  # +01:00, as German hydrology keeps its times
    got = statistics(series, type="annual", yearStart=11, timeZone="+01:00")
    local = values.tz_convert(tz)
    r = local.resample("YS-NOV")
    want = pd.DataFrame({"min": r.min(), "max": r.max(), "mean": r.mean(), "count": r.count(),
                         "minTime": r.apply(lambda s: s.idxmin()), "maxTime": r.apply(lambda s: s.idxmax())})
    want = want[want["count"] > 0]
    assert len(got) == len(want) == 3, (len(got), len(want))
    for row, (start, w) in zip(got, want.iterrows()):
        close(row["timestamp"], start, "annual timestamp")
        assert row["timestamp"].endswith("+01:00"), row
        assert row["year"] == start.year + 1, (row, start)
        for name in ("min", "max", "mean", "minTime", "maxTime"):
            close(row[name], w[name], f"annual {start.year} {name}")
        assert row["count"] == w["count"]
        expected = ((start + pd.DateOffset(years=1)) - start) / STEP
        close(row["coverage"], w["count"] / expected, f"annual {start.year} coverage")
    print(f"annual: {len(got)} hydrological years")


def check_duration(series, values):
    got = statistics(series, type="duration")
    assert [r["exceedance"] for r in got] == [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
    for row in got:
        close(row["value"], float(np.quantile(values.to_numpy(), 1 - row["exceedance"])),
              f"duration {row['exceedance']}")
    assert got[0]["value"] > got[-1]["value"], "the curve falls"
    # A reference period: only its values.
    period = {"from": "2023-03-01T00:00:00Z", "to": "2024-06-30T23:59:59Z"}
    part = values[pd.Timestamp(period["from"]):pd.Timestamp(period["to"])]
    got = statistics(series, type="duration", exceedance="0,0.5,1", **period)
    want = np.quantile(part.to_numpy(), [1.0, 0.5, 0.0])
    for row, w in zip(got, want):
        close(row["value"], float(w), f"duration in a period at {row['exceedance']}")
    assert got[0]["value"] == part.max() and got[2]["value"] == part.min()
    assert statistics(series, type="annual", **{"from": "1990-01-01T00:00:00Z", "to": "1991-01-01T00:00:00Z"}) == []
    print("duration: default and asked probabilities, a reference period, an empty one")


def check_annual_sums_and_coverage(series, values):
    """Annual sums beside the rest, and minCoverage: a year below it keeps its count and
    coverage, its statistics null (it was a 500 in every format, one series or many)."""
    tz = "Etc/GMT-1"
    r = values.tz_convert(tz).resample("YS-NOV")
    sums, counts = r.sum(), r.count()
    got = statistics(series, type="annual", yearStart=11, timeZone="+01:00", minCoverage="0.9")
    thin = [row for row in got if row["coverage"] < 0.9]
    assert thin, "no year below the threshold: the case is not tried"
    for row in got:
        start = pd.Timestamp(row["timestamp"]).tz_convert(tz)
        assert row["count"] == counts[start], (row, counts[start])
        if row["coverage"] < 0.9:
            assert all(row[k] is None for k in ("min", "max", "mean", "sum", "minTime")), row
        else:
            close(row["sum"], float(sums[start]), f"annual sum {start.year}")
    station, parameter = series
    asked = query(type="annual", yearStart=11, minCoverage="0.9")
    for form in ("json", "csv", "xml", "ndjson", "arrow", "parquet"):
        for path in (f"/stations/{station}/parameters/{parameter}/statistics?{asked}&format={form}",
                     f"/statistics?stations={station}&parameters={parameter}&{asked}&format={form}"):
            assert len(fetch(path)) > 0, path
    print(f"annual: sums, and {len(thin)} thin years with their counts in every format")


def check_duration_of_daily_means(series, values):
    """`interval=P1D`: the duration curve of the daily means (UTC days; thin days left out
    with minCoverage)."""
    got = statistics(series, type="duration", interval="P1D", minCoverage="0.5")
    means = daily_means(values, "UTC", 0.5)
    for row in got:
        close(row["value"], float(np.quantile(means.to_numpy(), 1 - row["exceedance"])),
              f"duration of daily means {row['exceedance']}")
    print(f"duration: of {len(means)} daily means")


def check_many_and_formats(station, parameter):
    asked = query(type="annual", yearStart=11, timeZone="Europe/Berlin")
    many = json.loads(fetch(f"/statistics?parameters={parameter}&{asked}"))["data"]
    stations = sorted({r["stationId"] for r in many})
    assert len(stations) > 3, stations
    for s in stations[:4]:
        mine = [{k: v for k, v in r.items() if k not in ("stationId", "parameterId")}
                for r in many if r["stationId"] == s]
        assert mine == statistics((s, parameter), type="annual", yearStart=11, timeZone="Europe/Berlin"), s
    one = f"/stations/{station}/parameters/{parameter}/statistics?type=dayOfYear&aggregate=mean,p90"
    rows = json.loads(fetch(one))["data"]
    frame = pd.read_csv(io.BytesIO(fetch(one + "&format=csv")))
    assert list(frame.columns) == ["month", "day", "mean", "p90", "years"], list(frame.columns)
    table = pq.read_table(io.BytesIO(fetch(one + "&format=parquet"))).to_pylist()
    xml = fetch(one + "&format=xml").decode()
    assert xml.count("<measurement>") == len(rows) and "<p90>" in xml, xml[:300]
    assert len(frame) == len(table) == len(rows)
    for row, c, p in zip(rows, frame.to_dict("records"), table):
        for k in row:
            close(float(c[k]), row[k], f"csv {k}")
            close(float(p[k]), row[k], f"parquet {k}")
    print(f"many series: {len(stations)} stations' annual values as their own; csv, xml and parquet as json")


def decimals(x):
    """The decimals of `x` written shortest (311.25: 2; 300.0: 0), at most 6."""
    text = format(float(x), "f") if "e" in repr(float(x)) else repr(float(x))
    fraction = text.split(".")[1] if "." in text else ""
    return 0 if fraction in ("", "0") else min(len(fraction), 6)


def half_up(x, digits):
    """`x` rounded to `digits` decimals, halves away from zero (as Rust's f64::round)."""
    scale = 10.0 ** digits
    return math.copysign(math.floor(abs(x) * scale + 0.5), x) / scale


def check_derived(min_years=3, share=0.9, year_start=11, zone="UTC"):
    """Derived characteristic values (NNW ... HHW, NNQ ... HHQ) against pandas: hydrological years
    from midnight of the 1st of `year_start` in `zone`; complete with `share` of their expected
    values; with at least `min_years` complete years, over them: lowest, mean of annual minima,
    mean, mean of annual maxima, highest."""
    later = int(year_start != 1)
    stations = json.loads(fetch("/stations?limit=6&fields=id"))["data"]
    checked = 0
    for station in (s["id"] for s in stations):
        parameters = json.loads(fetch(f"/stations/{station}/parameters"))["data"]
        derived = json.loads(fetch(f"/stations/{station}/characteristics?types=derived&limit=100"))["data"]
        for p in parameters:
            letter = {"waterLevel": "W", "discharge": "Q"}.get(p["observedProperty"])
            # Ours beside the imported ones (a generated dataset has an HSW of type derived).
            mine = {c["name"]: c for c in derived
                    if c["parameterId"] == p["id"] and c["id"].endswith("-derived")}
            if letter is None:
                assert not mine, (station, p["id"], mine)
                continue
            values = raw((station, p["id"]))
            step = pd.Timedelta(p["interval"])
            local = values.index.tz_convert(zone)
            years = values.groupby(local.year + later * (local.month >= year_start))
            complete = []
            for name, v in years:
                start = pd.Timestamp(f"{name - later}-{year_start:02}-01", tz=zone)
                end = pd.Timestamp(f"{name - later + 1}-{year_start:02}-01", tz=zone)
                if len(v) >= share * ((end - start) / step):
                    complete.append(v)
            if len(complete) < min_years:
                assert not mine, (station, p["id"], len(complete))
                continue
            # Means to the precision of the values: the most decimals of the years' extremes.
            digits = max(decimals(x) for v in complete for x in (v.min(), v.max()))
            want = {
                f"NN{letter}": min(v.min() for v in complete),
                f"MN{letter}": half_up(np.mean([v.min() for v in complete]), digits),
                f"M{letter}": half_up(pd.concat(complete).mean(), digits),
                f"MH{letter}": half_up(np.mean([v.max() for v in complete]), digits),
                f"HH{letter}": max(v.max() for v in complete),
            }
            assert set(mine) == set(want), (station, p["id"], sorted(mine))
            for name, value in want.items():
                c = mine[name]
                close(c["value"], float(value), f"{station} {name}")
                assert c["id"] == f"{name.lower()}-derived" and c["type"] == "derived", c
                assert c["unit"] == p["unit"]
                assert f"(from month {year_start}, {zone})" in c["description"], c
                close(c["period"]["start"], complete[0].index[0], f"{name} period start")
                close(c["period"]["end"], complete[-1].index[-1], f"{name} period end")
            checked += 1
    assert checked >= 2, checked
    print(f"derived: {checked} series' main values as pandas computes them "
          f"({min_years} years, {share}, from month {year_start}, {zone})")


def main():
    if sys.argv[2:3] == ["--derived"]:
        settings = sys.argv[3:]
        if settings:
            years, share, year_start, zone = settings
            check_derived(int(years), float(share), int(year_start), zone)
        else:
            check_derived()
        return
    stations = json.loads(fetch("/stations?limit=1&fields=id"))["data"]
    station = stations[0]["id"]
    series = (station, "water-level-15min")
    values = raw(series)
    check_day_of_year(series, values)
    check_month_of_year(series, values)
    check_annual(series, values)
    check_duration(series, values)
    check_annual_sums_and_coverage(series, values)
    check_duration_of_daily_means(series, values)
    check_many_and_formats(station, "water-level-15min")


if __name__ == "__main__":
    main()
