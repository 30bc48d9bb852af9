#!/usr/bin/env python3
"""Where a 10-year download spends its CPU: perf samples of the release server while curl
downloads the bench series again and again, as a table of the hottest functions and, when
inferno is installed (`cargo install inferno`), a flamegraph.

usage: python3 benches/profile.py [--format csv|json|arrow|parquet] [--requests N] [--no-build]

Needs perf (Debian: linux-perf). Writes benches/out/profile-<format>.txt and .svg.
Hardware counters are not available on every VM; this samples the CPU clock, which works
everywhere.
"""
import argparse
import re
import os
import shutil
import subprocess
import time

os.environ.setdefault("HYDRO_BENCH_PROFILE", "profiling")  # line tables for the call stacks
from harness import ROOT, CACHE, build_release, generate, sh, Hydro, curl, series_path  # noqa: F401


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", default="csv", choices=["csv", "json", "arrow", "parquet"])
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    build_release(args.no_build)
    archive = generate("archive-20x10", 20, 10)
    out_dir = os.path.join(ROOT, "benches", "out")
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"profile-{args.format}")

    server = Hydro(archive)
    url = server.base + series_path(server.base) + f"?format={args.format}"
    curl(url, fresh=True)  # footers into the cache, files into the page cache
    perf = subprocess.Popen(["perf", "record", "-F", "4000", "-g", "-p", str(server.proc.pid), "-o", stem + ".data"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    for _ in range(args.requests):
        curl(url, fresh=True)
    perf.send_signal(2)
    perf.wait(timeout=60)
    server.stop()

    report = sh("perf", "report", "-i", stem + ".data", "--no-children", "--stdio", "--sort", "symbol",
                "--percent-limit", "0.5")
    rows = [re.sub(r"\s+-\s+-\s*$", "", l).rstrip() for l in report.splitlines()
            if re.match(r"^\s+[0-9.]+%\s+\[", l)]
    text = f"perf, {args.requests} x GET {args.format} of a 10-year series (348 826 rows), self time:\n\n" + "\n".join(rows) + "\n"
    open(stem + ".txt", "w").write(text)
    print(text)
    if shutil.which("inferno-collapse-perf") and shutil.which("inferno-flamegraph"):
        script = subprocess.run(["perf", "script", "-i", stem + ".data"], capture_output=True, check=True).stdout
        folded = subprocess.run(["inferno-collapse-perf"], input=script, capture_output=True, check=True).stdout
        svg = subprocess.run(["inferno-flamegraph", "--title", f"hydro: {args.format} download"],
                             input=folded, capture_output=True, check=True).stdout
        open(stem + ".svg", "wb").write(svg)
        print(f"flamegraph: {stem}.svg")
    else:
        print("no flamegraph: install inferno (cargo install inferno) for one")


if __name__ == "__main__":
    main()
