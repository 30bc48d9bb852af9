#!/usr/bin/env python3
"""A 10-year chart against the other formats of the same series, side by side in one run.

On the 20-station x 10-year archive (15-minute values, ~350 000 rows a series), one series'
whole window as `format=svg` and `format=png` (900 x 400 pixels) and as Arrow IPC and CSV, each
made afresh (`Cache-Control: no-cache`), requests alternating format by format so that all see
the same machine; the median of `--runs` requests each. Target: a chart at the speed
of the other formats (it reads and decodes every value, then draws a few thousand points).
Usage:

    python3 benches/chart.py [--no-build] [--runs N]
"""

import argparse
import json
import statistics

import harness


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    harness.build_release(args.no_build)
    data = harness.generate("archive-20x10", 20, 10)
    h = harness.Hydro(data)
    try:
        sid = json.loads(harness.sh("curl", "-s", f"{h.base}/stations?types=surfaceWater&fields=id&limit=1"))["data"][0]["id"]
        series = f"{h.base}/stations/{sid}/parameters/discharge-15min/values"
        rows = json.loads(harness.sh("curl", "-s", f"{series}?limit=0"))["meta"]["pagination"]["total"]
        formats = {"SVG chart": "svg", "PNG chart": "png", "Arrow IPC": "arrow", "CSV": "csv"}
        times = {name: [] for name in formats}
        sizes = {}
        for name, f in formats.items():
            harness.curl(f"{series}?format={f}", fresh=True)  # warm-up: footers, page cache
        for _ in range(args.runs):
            for name, f in formats.items():
                t, _, size = harness.curl(f"{series}?format={f}", fresh=True)
                times[name].append(t)
                sizes[name] = size
        arrow = statistics.median(times["Arrow IPC"])
        print(f"10-year series: {rows} values; median of {args.runs} requests each, made afresh")
        print("| format | ms | bytes | / Arrow IPC |")
        print("|---|---:|---:|---:|")
        for name in formats:
            t = statistics.median(times[name])
            print(f"| {name} | {t * 1e3:.1f} | {sizes[name]} | {t / arrow:.2f} |")
    finally:
        h.stop()


if __name__ == "__main__":
    main()
