#!/usr/bin/env python3
"""Aggregates against DuckDB over the same files and against the raw download, side by side
in one run.

1. Daily mean, min and max (local days, Europe/Berlin) of a 10-year 15-minute series
   (discharge of the first surface-water station of the 20-station x 10-year archive):
   - ours: `GET .../values?aggregate=mean,min,max&interval=P1D&timeZone=Europe/Berlin&format=csv`;
   - DuckDB in process (threads = 2): `time_bucket(INTERVAL '1 day', timestamp,
     'Europe/Berlin')` over the station's value files (`read_parquet` with hive partitioning),
     grouped and ordered, to a CSV file;
   - the raw CSV download of the same series (what a user pulls today to compute them).
2. Annual maxima (hydrological year from November, Europe/Berlin) of every water-level series
   of the 300-station x 20-year archive in one request (`GET /v1/values?parameters=
   water-level-15min&aggregate=max,maxTime&interval=P1Y&yearStart=11&format=csv`) against
   DuckDB (the year of the local time two months on, `date_trunc('year', timezone(
   'Europe/Berlin', timestamp) + INTERVAL 2 MONTH)`, grouped by station).

Every request says `Cache-Control: no-cache` (made afresh, not sent from the answer store).
Medians of alternating runs; the answers are compared (bucket counts, and the values of the
daily means and the annual maxima). Targets: ours at least 5x faster than DuckDB on both; the
daily aggregate faster than the raw download.

Usage:

    python3 benches/aggregate.py [--no-build] [--runs N]
"""

import argparse
import io
import json
import math
import os
import tempfile

import duckdb
import pandas as pd

import harness


def duck(sql, out):
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET TimeZone = 'Europe/Berlin'")
    con.execute(f"COPY ({sql}) TO '{out}' (FORMAT csv, HEADER)")


def daily(runs, out):
    data = harness.generate("archive-20x10", 20, 10)
    h = harness.Hydro(data)
    try:
        path = harness.series_path(h.base)
        station = path.split("/")[2]
        ours_csv = os.path.join(out, "daily-ours.csv")
        url = f"{h.base}{path}?aggregate=mean,min,max&interval=P1D&timeZone=Europe/Berlin&format=csv"
        raw = f"{h.base}{path}?format=csv"
        duck_csv = os.path.join(out, "daily-duck.csv")
        sql = f"""SELECT time_bucket(INTERVAL '1 day', timestamp, 'Europe/Berlin') AS day,
                         avg(value) AS mean, min(value) AS min, max(value) AS max
                  FROM read_parquet('{data}/values/station={station}/*.parquet', hive_partitioning = true)
                  WHERE parameter = 'discharge-15min' GROUP BY day ORDER BY day"""
        t = harness.alternate(runs,
                      ours=lambda: harness.curl(url, fresh=True, out=ours_csv),
                      duckdb=lambda: duck(sql, duck_csv),
                      raw=lambda: harness.curl(raw, fresh=True))
        ours = pd.read_csv(ours_csv)
        theirs = pd.read_csv(duck_csv)
        assert len(ours) == len(theirs), (len(ours), len(theirs))
        assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(ours["mean"], theirs["mean"]))
        assert list(ours["max"]) == list(theirs["max"])
        return t, len(ours)
    finally:
        h.stop()


def annual(runs, out):
    data = harness.generate("append-300x20", 300, 20, start="2004-01-01")
    h = harness.Hydro(data)
    try:
        ours_csv = os.path.join(out, "annual-ours.csv")
        url = (f"{h.base}/values?parameters=water-level-15min&aggregate=max,maxTime&interval=P1Y"
               "&yearStart=11&timeZone=Europe/Berlin&format=csv")
        duck_csv = os.path.join(out, "annual-duck.csv")
        # Hydrological years: local time two months on is in the calendar year the
        # hydrological year is named by (November 2023 belongs to 2024). (`time_bucket` with a
        # TIMESTAMPTZ origin bucketed from October, UTC: not the oracle.)
        sql = f"""SELECT station,
                         date_trunc('year', timezone('Europe/Berlin', timestamp) + INTERVAL 2 MONTH) AS year,
                         max(value) AS max, arg_max(timestamp, value) AS maxTime
                  FROM read_parquet('{data}/values/*/*.parquet', hive_partitioning = true)
                  WHERE parameter = 'water-level-15min' GROUP BY station, year ORDER BY station, year"""
        t = harness.alternate(runs,
                      ours=lambda: harness.curl(url, fresh=True, out=ours_csv),
                      duckdb=lambda: duck(sql, duck_csv))
        ours = pd.read_csv(ours_csv)
        theirs = pd.read_csv(duck_csv)
        assert len(ours) == len(theirs), (len(ours), len(theirs))
        assert list(ours["max"]) == list(theirs["max"])
        return t, len(ours), ours["stationId"].nunique()
    finally:
        h.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--annual-only", action="store_true", help="skip the daily comparison")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    out = tempfile.mkdtemp(prefix="aggregate-")
    if not args.annual_only:
        t, days = daily(args.runs, out)
        print(f"daily mean/min/max, 10 years ({days} days): ours {t['ours'] * 1000:.1f} ms, "
              f"DuckDB {t['duckdb'] * 1000:.1f} ms ({t['duckdb'] / t['ours']:.1f}x), "
              f"raw CSV download {t['raw'] * 1000:.1f} ms ({t['raw'] / t['ours']:.1f}x)", flush=True)
    t, years, stations = annual(max(1, args.runs // 2), out)
    print(f"annual maxima, {stations} water-level series x 20 years ({years} rows): "
          f"ours {t['ours']:.2f} s, DuckDB {t['duckdb']:.2f} s ({t['duckdb'] / t['ours']:.1f}x)")


if __name__ == "__main__":
    main()
