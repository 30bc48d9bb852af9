#!/usr/bin/env python3
"""`hydro import` against DuckDB on the same values, side by side in one run.

Makes (with DuckDB) a values CSV of --rows rows (default 56 M: 40 stations x 2 parameters x
20 years of 15-minute values) and the same rows as Parquet, then for each input times
  - `hydro import` (checks every row, sorts each series, writes one Parquet file per
    station-month, publishes a manifest), and
  - DuckDB: COPY (SELECT ..., month) TO dir (FORMAT parquet, PARTITION_BY (stationId, month)),
reporting wall time, rows/s, peak RSS (the kernel's figure for the child, ru_maxrss) and bytes
written. Usage:

    python3 benches/import.py [--rows N] [--work DIR] [--hydro target/release/hydro]
        [--memory 1GiB] [--duckdb-memory 4GB]
"""

import argparse
import os
import shutil
import subprocess
import sys
import textwrap
import time


def run_measured(cmd, env=None):
    """Runs cmd; returns (seconds, peak RSS in bytes) as the kernel saw them."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed:\n{out}\n{err[-4000:]}")
    return seconds, usage.ru_maxrss * 1024


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def make_inputs(work, rows):
    import duckdb

    stations, params = 40, 2
    per_series = rows // (stations * params)
    values_csv = os.path.join(work, "values.csv")
    values_parquet = os.path.join(work, "values.parquet")
    marker = os.path.join(work, f"made-{rows}")
    if os.path.exists(marker):
        return values_csv, values_parquet, per_series * stations * params
    with open(os.path.join(work, "stations.csv"), "w") as f:
        f.write("id,name,type,state,lat,lon\n")
        for s in range(stations):
            f.write(f"gauge-{s:03},Gauge {s},surfaceWater,DE-NW,{50 + s * 0.05:.4f},{7 + s * 0.05:.4f}\n")
    with open(os.path.join(work, "parameters.csv"), "w") as f:
        f.write("stationId,id,name,observedProperty,unit,interval\n")
        for s in range(stations):
            f.write(f"gauge-{s:03},water-level-15min,Water level,waterLevel,cm,PT15M\n")
            f.write(f"gauge-{s:03},discharge-15min,Discharge,discharge,m3/s,PT15M\n")
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET enable_progress_bar = false")
    # Rows come in the order DuckDB's threads produce them: mostly series by series.
    select = f"""
        SELECT printf('gauge-%03d', s) AS stationId,
               CASE WHEN p = 0 THEN 'water-level-15min' ELSE 'discharge-15min' END AS parameterId,
               TIMESTAMPTZ '2000-01-01 00:00:00+00' + to_minutes(i * 15) AS timestamp,
               round(300 + 100 * sin(i / 500.0) + (hash(s, p, i) % 1000) / 100.0, 2) AS value,
               CASE WHEN hash(i, s) % 97 = 0 THEN 'suspect' ELSE 'good' END AS quality
        FROM range({stations}) t1(s), range({params}) t2(p), range({per_series}) t3(i)
    """
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        f"COPY (SELECT stationId, parameterId, strftime(timestamp, '%Y-%m-%dT%H:%M:%SZ') AS timestamp, "
        f"value, quality FROM ({select})) TO '{values_csv}' (HEADER)"
    )
    con.execute(f"COPY ({select}) TO '{values_parquet}' (FORMAT parquet)")
    open(marker, "w").close()
    return values_csv, values_parquet, per_series * stations * params


def duckdb_copy(source, out, memory):
    """A child process running DuckDB's partitioned COPY, so that its RSS is its own."""
    reader = f"read_parquet('{source}')" if source.endswith(".parquet") else f"read_csv('{source}')"
    script = textwrap.dedent(f"""
        import duckdb
        con = duckdb.connect()
        con.execute("SET threads = 2")
        con.execute("SET enable_progress_bar = false")
        con.execute("SET memory_limit = '{memory}'")
        con.execute("SET TimeZone = 'UTC'")
        con.execute(\"\"\"COPY (SELECT stationId, parameterId, CAST(timestamp AS TIMESTAMPTZ) AS timestamp,
                 value, quality, strftime(CAST(timestamp AS TIMESTAMPTZ), '%Y-%m') AS month FROM {reader})
            TO '{out}' (FORMAT parquet, PARTITION_BY (stationId, month))\"\"\")
    """)
    return [sys.executable, "-c", script]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=56_102_400)
    ap.add_argument("--work", default="/var/tmp/hydro-import-bench")
    ap.add_argument("--hydro", default="target/release/hydro")
    ap.add_argument("--memory", default="1GiB")
    ap.add_argument("--duckdb-memory", default="4GB")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    hydro = os.path.abspath(args.hydro)
    values_csv, values_parquet, rows = make_inputs(args.work, args.rows)
    print(f"{rows} rows; CSV {os.path.getsize(values_csv) / 1e9:.2f} GB, "
          f"Parquet {os.path.getsize(values_parquet) / 1e9:.2f} GB")
    results = []
    for kind, source in (("CSV", values_csv), ("Parquet", values_parquet)):
        for who in ("hydro", "duckdb"):
            out = os.path.join(args.work, f"out-{who}")
            shutil.rmtree(out, ignore_errors=True)
            if who == "hydro":
                cmd = [hydro, "import", "--out", out,
                       "--stations", os.path.join(args.work, "stations.csv"),
                       "--parameters", os.path.join(args.work, "parameters.csv"),
                       "--values", source, "--memory", args.memory,
                       "--spill-dir", args.work]
            else:
                cmd = duckdb_copy(source, out, args.duckdb_memory)
            seconds, rss = run_measured(cmd)
            results.append((kind, who, seconds, rss, du(out)))
            print(f"{kind:8} {who:7} {seconds:7.1f} s  {rows / seconds / 1e6:5.2f} M rows/s  "
                  f"peak RSS {rss / 2**20:6.0f} MiB  wrote {du(out) / 1e9:.2f} GB", flush=True)
            shutil.rmtree(out, ignore_errors=True)
    print()
    print("| input | tool | wall s | M rows/s | peak RSS MiB | written GB | wall vs DuckDB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for kind, who, seconds, rss, written in results:
        duck = next(r[2] for r in results if r[0] == kind and r[1] == "duckdb")
        print(f"| {kind} | {who} | {seconds:.1f} | {rows / seconds / 1e6:.2f} | {rss / 2**20:.0f} "
              f"| {written / 1e9:.2f} | {seconds / duck:.2f} |")


if __name__ == "__main__":
    main()
