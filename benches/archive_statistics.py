#!/usr/bin/env python3
"""Statistics at archive scale, side by side in one run. (Not `statistics.py`: a
script of that name would stand for Python's `statistics` module in every bench here.)

1. Annual maxima of every water-level series of an hourly archive (`hydro generate --interval
   PT1H`, by default 5 000 stations x 20 years, the 100 000-station-year archive) in one
   Parquet answer:
   - ours: `GET /v1/statistics?parameters=water-level-1h&type=annual&timeZone=UTC&format=parquet`
     (calendar years in UTC: every year is whole UTC days, summed from the daily rollups) and
     the German hydrological year (`yearStart=11&timeZone=%2B01:00`: each year's first UTC day
     is cut by its start and read raw);
   - DuckDB in process (threads = 2) over the raw value files (`read_parquet` with hive
     partitioning), grouped by station and year, to a Parquet file.
   The answers are compared (rows, and every maximum).
2. Day-of-year normals (mean, p10, p90 of the daily means, UTC) of one 20-year series: ours
   (`type=dayOfYear`) against pandas over the station's value files (read with pyarrow,
   `resample('D').mean()`, grouped by month and day), compared value by value.

Every request says `Cache-Control: no-cache`. Medians of alternating runs. Target: the
archive-wide answer at least 20x faster than DuckDB (its absolute time is printed too).

Usage:

    python3 benches/archive_statistics.py [--no-build] [--runs N] [--stations N] [--years N]
"""

import argparse
import glob
import io
import math
import os
import tempfile
import time

import duckdb
import pandas as pd
import pyarrow.parquet as pq

import harness

PARAMETER = "water-level-1h"


def duck(sql, out):
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"COPY ({sql}) TO '{out}' (FORMAT parquet)")


def annual(h, data, runs, out):
    ours_pq = os.path.join(out, "annual-ours.parquet")
    hydro_pq = os.path.join(out, "annual-hydro.parquet")
    duck_pq = os.path.join(out, "annual-duck.parquet")
    url = f"{h.base}/statistics?parameters={PARAMETER}&type=annual&timeZone=UTC&format=parquet"
    hydrological = (f"{h.base}/statistics?parameters={PARAMETER}&type=annual&yearStart=11"
                    "&timeZone=%2B01:00&format=parquet")
    sql = f"""SELECT station, date_trunc('year', timestamp) AS year, max(value) AS max,
                     arg_max(timestamp, value) AS maxTime
              FROM read_parquet('{data}/values/*/*.parquet', hive_partitioning = true)
              WHERE parameter = '{PARAMETER}' GROUP BY station, year ORDER BY station, year"""
    t = harness.alternate(runs,
                  ours=lambda: harness.curl(url, fresh=True, out=ours_pq),
                  hydrological=lambda: harness.curl(hydrological, fresh=True, out=hydro_pq),
                  duckdb=lambda: duck(sql, duck_pq))
    ours = pq.read_table(ours_pq).to_pandas().sort_values(["stationId", "timestamp"])
    theirs = pq.read_table(duck_pq).to_pandas().sort_values(["station", "year"])
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    assert list(ours["max"]) == list(theirs["max"]), "annual maxima differ"
    assert len(pq.read_table(hydro_pq)) > 0
    return t, len(ours), ours["stationId"].nunique()


def normals(h, data, runs):
    path = harness.series_path(h.base)
    station = path.split("/")[2]
    url = f"{h.base}/stations/{station}/parameters/{PARAMETER}/statistics?type=dayOfYear&aggregate=mean,p10,p90&timeZone=UTC&format=csv"
    files = sorted(glob.glob(f"{data}/values/station={station}/*.parquet"))

    def pandas_normals():
        table = pd.concat(pq.read_table(f).to_pandas() for f in files)
        series = table[table["parameter"] == PARAMETER].set_index("timestamp")["value"]
        daily = series.resample("D").mean().dropna()
        groups = daily.groupby([daily.index.month, daily.index.day])
        return pd.DataFrame({"mean": groups.mean(), "p10": groups.quantile(0.1), "p90": groups.quantile(0.9)})

    t = harness.alternate(runs, ours=lambda: harness.curl(url, fresh=True), pandas=pandas_normals)
    theirs = pandas_normals()
    ours = pd.read_csv(io.StringIO(harness.sh("curl", "-s", url)))
    assert len(ours) == len(theirs) == 366, (len(ours), len(theirs))
    for (_, o), (_, p) in zip(ours.iterrows(), theirs.iterrows()):
        for k in ("mean", "p10", "p90"):
            assert math.isclose(o[k], p[k], rel_tol=1e-9), (k, o[k], p[k])
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stations", type=int, default=5000)
    ap.add_argument("--years", type=int, default=20)
    args = ap.parse_args()
    harness.build_release(args.no_build)
    name = f"hourly-{args.stations}x{args.years}"
    started = time.perf_counter()
    data = harness.generate(name, args.stations, args.years, start="2004-01-01", interval="PT1H")
    print(f"archive {name}: ready in {time.perf_counter() - started:.0f} s", flush=True)
    out = tempfile.mkdtemp(prefix="statistics-")
    h = harness.Hydro(data)
    try:
        t, rows, stations = annual(h, data, args.runs, out)
        print(f"annual maxima, {stations} water-level series x {args.years} years ({rows} rows, Parquet): "
              f"ours {t['ours']:.2f} s, DuckDB {t['duckdb']:.2f} s ({t['duckdb'] / t['ours']:.1f}x); "
              f"hydrological years in +01:00 {t['hydrological']:.2f} s ({t['duckdb'] / t['hydrological']:.1f}x)",
              flush=True)
        t = normals(h, data, args.runs)
        print(f"day-of-year normals of one {args.years}-year series: ours {t['ours'] * 1000:.1f} ms, "
              f"pandas {t['pandas'] * 1000:.1f} ms ({t['pandas'] / t['ours']:.1f}x)")
    finally:
        h.stop()


if __name__ == "__main__":
    main()
