#!/usr/bin/env python3
"""Many series in one request against DuckDB over the same files and against one request per
series, side by side in one run.

On the 300-station x 20-year archive (15-minute values, `append.py`'s), every water-level
series (`parameters=water-level-15min`, every station that has one) is fetched:
- in one request, `GET /v1/values?parameters=water-level-15min&format=parquet` (and csv);
- with DuckDB in process, exporting the same rows from the value files (`read_parquet` over
  the archive's `values/` with hive partitioning, ordered by station and time) to a Parquet
  (and CSV) file, threads = 2;
- series by series, `GET /v1/stations/{id}/parameters/water-level-15min/values` with 4
  parallel curl clients.
Every request says `Cache-Control: no-cache` (made afresh, not sent from the answer store);
CSV answers go to /dev/null on both sides (some 15 GB).
Rows are counted in all three and compared (count and sum of values). Then `/v1/latest` for
every series of the archive, after one warm-up request. Targets: the one request at
least 5x faster than DuckDB and no slower than the per-series requests; latest under 50 ms.
Usage:

    python3 benches/many.py [--no-build]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import duckdb
import pyarrow.compute as pc
import pyarrow.parquet as pq
import harness


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    data = harness.generate("append-300x20", 300, 20, start="2004-01-01")
    h = harness.Hydro(data)
    out = tempfile.mkdtemp(prefix="many-")
    try:
        stations = json.loads(harness.sh("curl", "-s", f"{h.base}/stations?limit=1000&fields=id"))["data"]
        series, every = [], set()
        for s in stations:
            ps = json.loads(harness.sh("curl", "-s", f"{h.base}/stations/{s['id']}/parameters?fields=id"))["data"]
            every.update(p["id"] for p in ps)
            if any(p["id"] == "water-level-15min" for p in ps):
                series.append(s["id"])
        print(f"{len(series)} water-level series")
        results = {}
        for fmt in ("parquet", "csv"):
            # CSV answers (some 15 GB) go to /dev/null on both sides; Parquet ones are kept
            # to compare the rows.
            keep = fmt == "parquet"
            path = os.path.join(out, f"ours.{fmt}") if keep else "/dev/null"
            url = f"{h.base}/values?parameters=water-level-15min&format={fmt}"
            harness.curl(url, fresh=True, out=path)  # warm-up: footers, page cache
            t, (total, _, size) = timed(lambda: harness.curl(url, fresh=True, out=path))
            results[("ours", fmt)] = (t, size)
            print(f"ours {fmt}: {t:.2f} s", flush=True)
            duck = os.path.join(out, f"duck.{fmt}") if keep else "/dev/null"
            con = duckdb.connect()
            con.execute("SET threads = 2")
            opts = "(FORMAT parquet)" if fmt == "parquet" else "(FORMAT csv, HEADER)"
            sql = f"""COPY (SELECT station AS stationId, parameter AS parameterId, timestamp, value, quality
                      FROM read_parquet('{data}/values/*/*/*.parquet', hive_partitioning = true)
                      WHERE parameter = 'water-level-15min' ORDER BY station, timestamp) TO '{duck}' {opts}"""
            # (The files are in the page cache: the warm-up request above read them.)
            t, _ = timed(lambda: con.execute(sql))
            results[("duckdb", fmt)] = (t, os.path.getsize(duck) if keep else None)
            print(f"duckdb {fmt}: {t:.2f} s", flush=True)
        # One request per series, 4 clients.
        urls = "\n".join(f"{h.base}/stations/{s}/parameters/water-level-15min/values?format=parquet" for s in series)
        listfile = os.path.join(out, "urls")
        open(listfile, "w").write(urls + "\n")
        cmd = ["sh", "-c", f"xargs -P 4 -n 1 curl -s -o /dev/null -H 'Cache-Control: no-cache' < {listfile}"]
        t, _ = timed(lambda: subprocess.run(cmd, check=True))
        results[("per-series x4", "parquet")] = (t, None)
        print(f"per-series: {t:.2f} s", flush=True)

        # The value column only: both tables whole (174 M rows, DuckDB's ids as plain
        # strings) took over 20 GB and the bench was killed for it.
        ours = pq.read_table(os.path.join(out, "ours.parquet"), columns=["value"])
        theirs = pq.read_table(os.path.join(out, "duck.parquet"), columns=["value"])
        total = lambda t: pc.sum(t["value"]).as_py()
        same = (ours.num_rows == theirs.num_rows
                and abs(total(ours) - total(theirs)) <= 1e-9 * abs(total(ours)))
        print(f"rows: ours {ours.num_rows}, duckdb {theirs.num_rows}; same rows and value sum: {same}")
        print("| fetch | format | seconds | bytes | DuckDB / it |")
        print("|---|---|---:|---:|---:|")
        for (who, fmt), (t, size) in results.items():
            duck = results[("duckdb", fmt)][0]
            print(f"| {who} | {fmt} | {t:.2f} | {size or ''} | {duck / t:.1f} |")
        all_ids = ",".join(sorted(every))
        url = f"{h.base}/latest?parameters={all_ids}&limit=100000"
        harness.curl(url)
        times = [harness.curl(url)[0] for _ in range(15)]
        rows = len(json.loads(harness.sh("curl", "-s", url))["data"])
        print(f"latest: {rows} series, median {statistics.median(times) * 1e3:.1f} ms over 15 requests")
    finally:
        h.stop()
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
