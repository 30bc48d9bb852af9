#!/usr/bin/env python3
"""Two archives of the same data (rollup files written by two builds) served by one build,
taking turns: archive-wide aggregates that read every station's rollup file, made afresh
(`Cache-Control: no-cache`); medians, and the two answers compared byte for byte. Outside CI.

    python3 benches/rollup_read_ab.py HYDRO ARCHIVE_A ARCHIVE_B [--runs N]

e.g. archives from `hydro generate --out DIR --stations 200 --years 20 --seed 3 --start
2004-01-01 --interval PT1H` of each build.
"""

import argparse
import filecmp
import os
import statistics
import tempfile

import harness

REQUESTS = {
    "annual maxima of every water-level series":
        "/v1/values?parameters=water-level-1h&aggregate=max,maxTime&interval=P1Y&format=csv",
    "monthly means of every discharge series":
        "/v1/values?parameters=discharge-1h&aggregate=mean&interval=P1M&format=csv",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hydro")
    ap.add_argument("archives", nargs=2)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    servers = [harness.Hydro(archive, args.hydro) for archive in args.archives]
    try:
        work = tempfile.mkdtemp()
        answers = [os.path.join(work, "a"), os.path.join(work, "b")]
        for name, path in REQUESTS.items():
            times = [[], []]
            for run in range(args.runs):
                for i in (0, 1) if run % 2 == 0 else (1, 0):
                    url = servers[i].base + path.removeprefix("/v1")
                    times[i].append(harness.curl(url, out=answers[i], fresh=True)[0])
            if not filecmp.cmp(*answers, shallow=False):
                raise SystemExit(f"{name}: the answers differ")
            a, b = (statistics.median(t) * 1000 for t in times)
            print(f"{name}: A {a:.1f} ms, B {b:.1f} ms (B/A {b / a:.2f}), "
                  f"{os.path.getsize(answers[0])} bytes, the same answer")
    finally:
        for server in servers:
            server.stop()

if __name__ == "__main__":
    main()
