#!/usr/bin/env python3
"""Aggregates against independent oracles (run by tests/aggregates.rs).

usage: aggregates.py BASE_URL DATASET_DIR

Generated series (two years from 2023-01-01: the leap day of 2024, both DST changes of each
year, gaps) are summarised by the server and by pandas `resample` (after `tz_convert` for
day buckets and longer; on the UTC grid for shorter ones) and, for day and month buckets, by
DuckDB `time_bucket` over the archive's Parquet files; every statistic of every bucket is
compared. Then: coverage (a complete 23-hour day is 1.0), minCoverage, recent, sort, the
many-series answer equal to the single-series ones, and the Arrow, Parquet and CSV answers
equal to the JSON one.
"""
import io
import json
import math
import os
import sys
import urllib.parse
import urllib.request

import duckdb
import pandas as pd
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

BASE, ROOT = sys.argv[1], sys.argv[2]
STEP = pd.Timedelta(minutes=15)
STATISTICS = ["mean", "min", "max", "sum", "count", "first", "last", "median", "p5", "p95",
              "minTime", "maxTime"]


def fetch(path):
    with urllib.request.urlopen(BASE + path) as r:
        return r.read()


def query(**params):
    return urllib.parse.urlencode(params, safe=",/:")


def aggregates(series, **params):
    station, parameter = series
    body = json.loads(fetch(f"/stations/{station}/parameters/{parameter}/values?{query(**params)}"))
    return body["data"]


def raw(series):
    station, parameter = series
    csv = fetch(f"/stations/{station}/parameters/{parameter}/values?format=csv")
    frame = pd.read_csv(io.BytesIO(csv))
    index = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
    return pd.Series(frame["value"].to_numpy(), index=index)


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def instant(text):
    return pd.Timestamp(text).tz_convert("UTC")


def oracle(values, rule, tz):
    """pandas' buckets: day buckets and longer in the zone's calendar, shorter ones on the UTC
    grid; every bucket from the first to the last that holds a value, the empty ones between
    them too, as the server answers them."""
    local = values.tz_convert(tz) if rule in ("D", "MS", "QS-NOV", "YS", "YS-NOV", "YS-OCT") else values
    r = local.resample(rule)
    frame = pd.DataFrame({
        "mean": r.mean(), "min": r.min(), "max": r.max(), "sum": r.sum(), "count": r.count(),
        "first": r.first(), "last": r.last(), "median": r.median(),
        "p5": r.quantile(0.05), "p95": r.quantile(0.95),
        "minTime": r.apply(lambda s: s.idxmin() if len(s) else None),
        "maxTime": r.apply(lambda s: s.idxmax() if len(s) else None),
    })
    held = frame.index[frame["count"] > 0]
    return frame.loc[held.min():held.max()] if len(held) else frame.iloc[0:0]


def compare(series, interval, rule, tz, extra=None):
    values = raw(series)
    want = oracle(values, rule, tz)
    params = {"aggregate": ",".join(STATISTICS), "interval": interval, "timeZone": tz} | (extra or {})
    got = aggregates(series, **params)
    assert len(got) == len(want), (interval, tz, len(got), len(want))
    empty = 0
    for row, (label, expected) in zip(got, want.iterrows()):
        assert instant(row["timestamp"]) == label.tz_convert("UTC"), (interval, tz, row, label)
        if expected["count"] == 0:
            # A bucket wholly in a gap: count 0, coverage 0, no statistics (pandas' sum of
            # nothing is 0; a sum of no values is unknown, not zero rain).
            empty += 1
            assert row["count"] == 0 and row["coverage"] == 0, (interval, tz, row)
            assert all(row[n] is None for n in STATISTICS if n != "count"), (interval, tz, row)
            continue
        for name in STATISTICS:
            e = expected[name]
            if name in ("minTime", "maxTime"):
                assert instant(row[name]) == e.tz_convert("UTC"), (interval, tz, name, row, e)
            elif name == "count":
                assert row[name] == int(e), (interval, tz, row, e)
            else:
                assert close(row[name], float(e)), (interval, tz, name, row[name], e)
        # Coverage: values over the values the bucket's whole length holds.
        start = label
        end = start + (pd.tseries.frequencies.to_offset(rule) if rule not in ("D",) else pd.DateOffset(days=1))
        expected_values = (end - start) / STEP
        assert close(row["coverage"], row["count"] / expected_values), (interval, tz, row, start, end)
    return got, empty


def check_oracles():
    series = first_series("water-level-15min")
    cases = [
        ("PT1H", "h", "UTC"), ("PT6H", "6h", "Europe/Berlin"), ("PT15M", "15min", "+05:30"),
        ("P1D", "D", "Europe/Berlin"), ("P1D", "D", "UTC"), ("P1D", "D", "America/New_York"),
        ("P1M", "MS", "Europe/Berlin"), ("P3M", "QS-NOV", "Europe/Berlin"),
        ("P1Y", "YS", "UTC"), ("P1Y", "YS-NOV", "Europe/Berlin"), ("P1Y", "YS-OCT", "UTC"),
    ]
    empty = 0
    for interval, rule, tz in cases:
        extra = {}
        if rule.endswith("NOV"):
            extra = {"yearStart": "11"}
        if rule.endswith("OCT"):
            extra = {"yearStart": "10"}
        empty += compare(series, interval, rule, tz, extra)[1]
    # The gaps make buckets without values: they are answered, as pandas has them.
    assert empty > 0, "no empty bucket was compared"
    print(f"pandas: {len(cases)} intervals and zones, every statistic of every bucket "
          f"({empty} empty)")


def check_duckdb():
    station, parameter = first_series("water-level-15min")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'Europe/Berlin'")
    files = os.path.join(ROOT, "values", f"station={station}", "*.parquet")
    got = aggregates((station, parameter), aggregate="mean,min,max,p25", interval="P1D",
                     timeZone="Europe/Berlin")
    rows = con.execute(f"""
        SELECT time_bucket(INTERVAL '1 day', timestamp, 'Europe/Berlin') AS day,
               avg(value), min(value), max(value), quantile_cont(value, 0.25), count(value)
        FROM read_parquet('{files}', hive_partitioning = true)
        WHERE parameter = '{parameter}' AND value IS NOT NULL
        GROUP BY day ORDER BY day""").fetchall()
    # DuckDB's groups are the days with values; the server answers the days between them
    # that have none too (count 0), as the pandas oracle above has them.
    assert all(r["count"] == 0 and r["mean"] is None for r in got if r["count"] == 0 or r["mean"] is None)
    got = [r for r in got if r["count"] > 0]
    assert len(rows) == len(got), (len(rows), len(got))
    for row, (day, mean, lo, hi, p25, count) in zip(got, rows):
        assert instant(row["timestamp"]) == pd.Timestamp(day).tz_convert("UTC"), (row, day)
        assert close(row["mean"], mean) and row["min"] == lo and row["max"] == hi, (row, mean, lo, hi)
        assert close(row["p25"], p25) and row["count"] == count, (row, p25, count)
    print(f"duckdb: {len(rows)} local days")


def first_series(parameter):
    stations = json.loads(fetch(f"/stations?limit=100&include=parameters"))["data"]
    for s in stations:
        if any(p["id"] == parameter for p in s.get("parameters", [])):
            return s["id"], parameter
    raise AssertionError(f"no station has {parameter}")


def check_coverage_and_options():
    series = first_series("water-level-15min")
    days = aggregates(series, aggregate="count", interval="P1D", timeZone="Europe/Berlin",
                      **{"from": "2023-03-20T00:00:00+01:00", "to": "2024-11-10T00:00:00+01:00"})
    by_day = {d["timestamp"][:10]: d for d in days}
    for change, hours in (("2023-03-26", 23), ("2024-03-31", 23), ("2023-10-29", 25), ("2024-10-27", 25)):
        d = by_day[change]
        assert math.isclose(d["coverage"], d["count"] / (hours * 4)), d
    full_short = [d for day, d in by_day.items() if day in ("2023-03-26", "2024-03-31") and d["count"] == 92]
    assert all(d["coverage"] == 1 for d in full_short), full_short
    # The window cuts the last bucket: it shows partial coverage.
    last = days[-1]
    assert last["timestamp"].startswith("2024-11-10") and last["count"] == 1, last
    assert math.isclose(last["coverage"], 1 / 96), last

    covered = aggregates(series, aggregate="mean,count", interval="P1D", minCoverage="0.99")
    thin = [d for d in covered if d["coverage"] < 0.99]
    # Thin buckets (the empty ones between among them) have no statistics, but their count.
    assert thin and all(d["mean"] is None for d in thin), thin[:3]
    assert any(d["count"] > 0 for d in thin) and any(d["count"] == 0 for d in thin), thin[:3]
    assert all(d["mean"] is not None for d in covered if d["coverage"] >= 0.99)

    all_months = aggregates(series, aggregate="mean", interval="P1M")
    recent = aggregates(series, aggregate="mean", interval="P1M", recent="3")
    assert recent == all_months[-3:], (recent, all_months[-3:])

    top = aggregates(series, aggregate="max", interval="P1M", sort="-max", limit="3")
    assert [t["max"] for t in top] == sorted((m["max"] for m in aggregates(series, aggregate="max", interval="P1M")), reverse=True)[:3]

    window = aggregates(series, aggregate="count,first,last")
    values = raw(series)
    assert len(window) == 1 and window[0]["count"] == len(values), window
    span = (values.index[-1] - values.index[0]) / STEP + 1
    assert math.isclose(window[0]["coverage"], len(values) / span), (window, span)

    good = aggregates(series, aggregate="count", qualities="good")
    assert 0 < good[0]["count"] < len(values), (good, len(values))
    print("coverage, minCoverage, recent, sort, one bucket, qualities: ok")


def check_many_and_formats():
    stations = [s["id"] for s in json.loads(fetch("/stations?limit=3&types=surfaceWater"))["data"]]
    params = {"aggregate": "mean,max,maxTime", "interval": "P1M", "timeZone": "Europe/Berlin"}
    many = json.loads(fetch("/values?" + query(stations=",".join(stations),
                                                parameters="water-level-15min,discharge-15min", **params)))["data"]
    singles = []
    for s in sorted(stations):
        for p in ("discharge-15min", "water-level-15min"):
            for row in aggregates((s, p), **params):
                singles.append({"stationId": s, "parameterId": p} | row)
    assert many == singles, (len(many), len(singles))

    series = first_series("water-level-15min")
    station, parameter = series
    path = f"/stations/{station}/parameters/{parameter}/values?" + query(**params)
    rows = aggregates(series, **params)
    arrow = ipc.open_stream(fetch(path + "&format=arrow")).read_all().to_pylist()
    parquet = pq.read_table(io.BytesIO(fetch(path + "&format=parquet"))).to_pylist()
    csv = pd.read_csv(io.BytesIO(fetch(path + "&format=csv")))
    for table in (arrow, parquet):
        assert len(table) == len(rows)
        for got, want in zip(table, rows):
            assert pd.Timestamp(got["timestamp"]) == instant(want["timestamp"]), (got, want)
            assert got["mean"] == want["mean"] and got["count"] == want["count"], (got, want)
            assert pd.Timestamp(got["maxTime"]) == instant(want["maxTime"]), (got, want)
    assert list(csv.columns) == ["timestamp", "mean", "max", "maxTime", "count", "coverage"], csv.columns
    assert list(csv["timestamp"]) == [r["timestamp"] for r in rows]
    assert all(close(a, b["mean"]) for a, b in zip(csv["mean"], rows))
    print(f"many series: {len(many)} rows equal the single-series answers; arrow, parquet, csv agree")


check_oracles()
check_duckdb()
check_coverage_and_options()
check_many_and_formats()
