#!/usr/bin/env python3
"""First requests for stations not asked before, on two `hydro` binaries serving the same
archive: each server gets the same random stations, requests alternate between them (which one
goes first alternates too), and each station is asked once per server, so every request decodes
its station's rows of the files table and reads its month's footer. Half the stations get
`recent=1`, the other half a one-month window. Medians of curl's total time (ms).

    python3 benches/first_ab.py ARCHIVE OLD NEW [--stations 600] [--seed 3] [--month 2014-06]
"""

import argparse
import json
import random
import statistics
import time
import urllib.request

import harness


def month_window(month):
    """`from`/`to` of the calendar month `YYYY-MM` (UTC)."""
    y, m = (int(p) for p in month.split("-"))
    end = f"{y + 1}-01" if m == 12 else f"{y}-{m + 1:02d}"
    return f"from={month}-01T00:00:00Z&to={end}-01T00:00:00Z"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("archive")
    ap.add_argument("binaries", nargs=2)
    ap.add_argument("--stations", type=int, default=600)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--month", default="2014-06", help="the one-month window (YYYY-MM)")
    args = ap.parse_args()
    servers = [harness.Hydro(args.archive, binary=b) for b in args.binaries]
    try:
        for s in servers:
            while True:
                try:
                    urllib.request.urlopen(s.base + "/health")
                    break
                except OSError:
                    time.sleep(0.1)
        base = servers[0].base
        ids = [s["id"] for s in json.load(urllib.request.urlopen(f"{base}/stations?fields=id&limit=100000"))["data"]]
        random.Random(args.seed).shuffle(ids)
        picks = []
        for sid in ids[:args.stations]:
            params = json.load(urllib.request.urlopen(f"{base}/stations/{sid}/parameters?fields=id"))["data"]
            picks.append((sid, params[0]["id"]))
        half = len(picks) // 2
        for kind, query, chosen in (
            ("recent=1", "recent=1", picks[:half]),
            ("one month", month_window(args.month), picks[half:]),
        ):
            times = [[], []]
            for i, (sid, pid) in enumerate(chosen):
                for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                    url = f"{servers[k].base}/stations/{sid}/parameters/{pid}/values?{query}"
                    times[k].append(harness.curl(url, fresh=True)[0] * 1e3)
            print(f"{kind}, first: {args.binaries[0]} {statistics.median(times[0]):.2f} ms, "
                  f"{args.binaries[1]} {statistics.median(times[1]):.2f} ms ({len(chosen)} stations)")
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
