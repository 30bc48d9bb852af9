#!/usr/bin/env python3
"""Many series as one request against the same series as one request each (4 clients), for
one or more builds side by side, alternating, on the 100-station x 20-year archive (15-minute
values): every water-level series as one Parquet answer
(`GET /v1/values?parameters=water-level-15min&format=parquet`), then series by series. Every
request says `Cache-Control: no-cache` (made afresh). Prints the medians per build.

    python3 benches/many_ab.py --runs 5 /tmp/old-hydro target/release/hydro

Target: the one request the fastest way to the series, using both cores.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("builds", nargs="+")
    args = ap.parse_args()
    data = h.generate("archive-100x20", 100, 20, start="2004-01-01")
    servers = [h.Hydro(data, binary) for binary in args.builds]
    try:
        base = servers[0].base
        stations = json.loads(h.sh("curl", "-s", f"{base}/stations?limit=1000&fields=id"))["data"]
        series = []
        for s in stations:
            ps = json.loads(h.sh("curl", "-s", f"{base}/stations/{s['id']}/parameters?fields=id"))["data"]
            if any(p["id"] == "water-level-15min" for p in ps):
                series.append(s["id"])
        print(f"{len(series)} water-level series, {args.runs} runs, builds alternating")
        lists = []
        for server in servers:
            f = tempfile.NamedTemporaryFile("w", delete=False, suffix=".urls")
            f.write("\n".join(f"{server.base}/stations/{s}/parameters/water-level-15min/values?format=parquet"
                              for s in series) + "\n")
            f.close()
            lists.append(f.name)
        one = {b: [] for b in args.builds}
        each = {b: [] for b in args.builds}
        sizes = {}
        for run in range(args.runs + 1):
            for build, server, urls in zip(args.builds, servers, lists):
                url = f"{server.base}/values?parameters=water-level-15min&format=parquet"
                t = time.perf_counter()
                _, _, size = h.curl(url, fresh=True)
                took = time.perf_counter() - t
                sizes[build] = size
                t = time.perf_counter()
                subprocess.run(["sh", "-c", f"xargs -P 4 -n 1 curl -s -o /dev/null "
                                            f"-H 'Cache-Control: no-cache' < {urls}"], check=True)
                per = time.perf_counter() - t
                if run > 0:  # the first run warms the page cache and the footer caches
                    one[build].append(took)
                    each[build].append(per)
        print("| build | one request s | per series x4 s | one / per series | bytes |")
        print("|---|---:|---:|---:|---:|")
        for build in args.builds:
            a, b = statistics.median(one[build]), statistics.median(each[build])
            print(f"| {build} | {a:.2f} | {b:.2f} | {a / b:.2f} | {sizes[build]} |")
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
