#!/usr/bin/env python3
"""An agency's files, read by readers of their own, against what the API serves of them once
`hydro import` read them with the options data/README.md gives (run by tests/agency.rs).

usage: agency.py BASE_URL SAMPLE_DIR

- the ZRXP file by the PyPI `zrxp` reader (KISTERS' format): every block's rows, its RINVAL
  values as recorded gaps;
- the WISKI export (Latin-1, `;`, decimal commas, station blocks, MEZ, -999 for missing), the
  daily precipitation (7 header lines) and the wide sheet (local time with DST, the repeated
  hour resolved by pandas' `tz_localize(ambiguous="infer")`) by pandas;
- the master data's Gauss-Krüger coordinates, converted with the standard's Helmert
  parameters, within 1.5 m of what PROJ gives (pyproj, when installed).
Each series row by row: time, value (None for a gap) and quality.
"""
import io
import json
import sys
import urllib.parse
import urllib.request

import pandas as pd
import zrxp

BASE, SAMPLE = sys.argv[1], sys.argv[2]


def fetch(path):
    with urllib.request.urlopen(BASE + path) as r:
        return r.read()


def served(station, parameter):
    """The series as the API serves it: [(UTC timestamp, value or None, quality)]."""
    csv = fetch(f"/stations/{station}/parameters/{parameter}/values?format=csv")
    frame = pd.read_csv(io.BytesIO(csv), dtype={"quality": str})
    times = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
    return [(t, None if pd.isna(v) else float(v), q)
            for t, v, q in zip(times, frame["value"], frame["quality"])]


def served_within(station, parameter, want):
    """The rows served in the span of `want` (other files add rows to a series elsewhere:
    the wide sheet's in October)."""
    return [r for r in served(station, parameter) if want[0][0] <= r[0] <= want[-1][0]]


def same(want, got, what, relative=1e-12):
    """Row by row; values within `relative` (the zrxp reader gives 32-bit floats)."""
    assert len(want) == len(got), (what, len(want), len(got))
    for w, g in zip(want, got):
        assert w[0] == g[0], (what, w, g)
        assert (w[1] is None and g[1] is None) or (
            w[1] is not None and g[1] is not None
            and abs(w[1] - g[1]) <= relative * max(abs(w[1]), 1.0)), (what, w, g)
        assert w[2] == g[2], (what, w, g)


def rows(times, values, quality, missing):
    """Expected rows: UTC times, values (a missing one is a gap: None, quality missing)."""
    out = []
    for t, v in zip(times, values):
        gap = pd.isna(v) or v in missing
        out.append((t.tz_convert("UTC"), None if gap else float(v), "missing" if gap else quality))
    return sorted(out, key=lambda r: r[0])


def check_zrxp():
    blocks = zrxp.read(f"{SAMPLE}/export.zrxp")
    for b in blocks:
        m = b.metadata
        data = b.data
        want = rows(data.index, data["value"].astype(float), "unchecked", {float(m.RINVAL)})
        same(want, served_within(m.SANR, m.CNR, want), f"zrxp {m.SANR}/{m.CNR}", relative=1e-6)
    print(f"zrxp: {len(blocks)} blocks agree with the zrxp reader")


def check_wiski():
    station = parameter = None
    header = None
    found = {}
    with open(f"{SAMPLE}/wiski-export.csv", encoding="latin-1") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#Station;"):
                station = line.split(";")[1]
            elif line.startswith("#Parameter;"):
                parameter = line.split(";")[1]
            elif line.startswith("#"):
                continue
            elif line.startswith("Datum;"):
                header = line.split(";")
            else:
                day, time, value = line.split(";")
                found.setdefault((station, parameter), []).append((f"{day} {time}", value))
    assert header == ["Datum", "Uhrzeit", "Wert"], header
    for (station, parameter), lines in found.items():
        times = pd.to_datetime([t for t, _ in lines], format="%d.%m.%Y %H:%M").tz_localize("Etc/GMT-1")
        values = [float(v.replace(",", ".")) for _, v in lines]
        want = rows(times, values, "good", {-999.0})
        same(want, served_within(station, parameter, want), f"wiski {station}/{parameter}")
    print(f"wiski: {len(found)} blocks agree with pandas")


def check_precipitation():
    frame = pd.read_csv(f"{SAMPLE}/niederschlag-tag.csv", sep=";", decimal=",", encoding="latin-1",
                        skiprows=7)
    times = pd.to_datetime(frame["Datum"], format="%d.%m.%Y").dt.tz_localize("Etc/GMT-1")
    want = rows(times, frame["Tagessumme"], "good", set())
    same(want, served("4711", "N"), "precipitation")
    # Stamped at local midnight: the first day is 2023-12-31T23:00Z, not a day early in its own
    # calendar (the dataset's days start then too: data/README.md).
    assert want[0][0] == pd.Timestamp("2023-12-31T23:00:00Z"), want[0]
    print(f"precipitation: {len(want)} days agree with pandas")


def check_dataset_zone():
    """The dataset's own zone (--dataset-zone MEZ): aggregates and statistics without timeZone
    are of its days and months, so the daily precipitation stamped at local midnight is each
    its own day's sum; its monthly normals are of monthly sums."""
    frame = pd.read_csv(f"{SAMPLE}/niederschlag-tag.csv", sep=";", decimal=",", encoding="latin-1",
                        skiprows=7)
    days = json.loads(fetch("/stations/4711/parameters/N/values?aggregate=sum&interval=P1D"))["data"]
    assert len(days) == len(frame), (len(days), len(frame))
    for row, (_, want) in zip(days, frame.iterrows()):
        d, m, y = want["Datum"].split(".")
        assert row["timestamp"] == f"{y}-{m}-{d}T00:00:00+01:00", (row, want)
        assert abs(row["sum"] - want["Tagessumme"]) < 1e-9, (row, want)
    values = pd.Series(frame["Tagessumme"].to_numpy(),
                       index=pd.to_datetime(frame["Datum"], format="%d.%m.%Y").dt.tz_localize("Etc/GMT-1"))
    monthly = values.resample("MS").sum()
    normals = json.loads(fetch("/stations/4711/parameters/N/statistics?type=monthOfYear"))["data"]
    assert [r["month"] for r in normals] == list(monthly.index.month), normals
    for row, total in zip(normals, monthly):
        assert abs(row["mean"] - total) < 1e-9 and row["years"] == 1, (row, total)
    annual = json.loads(fetch("/stations/4711/parameters/N/statistics?type=annual"))["data"]
    assert abs(annual[0]["sum"] - values.sum()) < 1e-9, annual
    # The daily rollups, in SQL, are the same local days: a row a day (the first day's
    # midnight is 2023-12-31T23:00Z), whose sum is the day's value.
    q = urllib.parse.quote("SELECT day, sum FROM daily WHERE station = '4711' ORDER BY day")
    rows = pd.read_csv(io.BytesIO(fetch(f"/sql?format=csv&q={q}")))
    assert len(rows) == len(frame), (len(rows), len(frame))
    assert rows["day"][0] == "2023-12-31T23:00:00+00:00", rows.head()
    for got, want in zip(rows["sum"], frame["Tagessumme"]):
        assert abs(got - want) < 1e-9, (got, want)
    print(f"dataset zone: {len(days)} daily sums on their local days (aggregates and SQL's "
          f"daily), monthly normals of sums")


def check_wide():
    frame = pd.read_csv(f"{SAMPLE}/pegel-wide.csv", sep=";", decimal=",")
    local = pd.to_datetime(frame["Zeit"], format="%d.%m.%Y %H:%M")
    times = pd.DatetimeIndex(local).tz_localize("Europe/Berlin", ambiguous="infer")
    columns = {"Köln W [cm]": ("2710080", "W"), "Köln Q [m³/s]": ("2710080", "Q"),
               "Düsseldorf W [cm]": ("2710090", "W")}
    for column, (station, parameter) in columns.items():
        held = frame[column].notna()
        want = rows(times[held.to_numpy()], frame[column][held], "unchecked", set())
        got = [r for r in served(station, parameter) if r[0].month == 10]
        same(want, got, f"wide {column}")
    print(f"wide: {len(columns)} columns agree with pandas, the repeated hour in order")


def check_stations():
    stations = {s["id"]: s for s in json.loads(fetch("/stations?limit=100"))["data"]}
    assert set(stations) == {"2710080", "2710090", "4711"}, stations
    assert stations["2710090"]["name"] == "Düsseldorf", stations["2710090"]
    koeln = stations["2710080"]
    assert koeln["gaugeZero"]["value"] == 34.97 and koeln["riverKm"] == 688.0, koeln
    try:
        from pyproj import Transformer
    except ImportError:
        print("stations: names, gauge zero and river km as written (pyproj not installed)")
        return
    gk = Transformer.from_crs("+proj=tmerc +lat_0=0 +lon_0=6 +k=1 +x_0=2500000 +y_0=0 "
                              "+ellps=bessel +towgs84=598.1,73.7,418.2,0.202,0.045,-2.455,6.7 "
                              "+units=m", "EPSG:4326", always_xy=True)
    lon, lat = gk.transform(2567178.0, 5645467.0)
    assert abs(lat - koeln["coordinates"]["lat"]) < 2e-5 and abs(lon - koeln["coordinates"]["lon"]) < 2e-5
    print("stations: as written, Gauss-Krüger within a metre of PROJ")


check_zrxp()
check_wiski()
check_precipitation()
check_dataset_zone()
check_wide()
check_stations()
print("agency files agree")
