#!/usr/bin/env python3
"""Latest values while the archive is appended to, with the server left running.

On a hard-linked copy of the 300-station x 20-year archive of `append.py`, a server with
`follow_seconds = 1` answers `recent=1` for 100 random series (each asked twice: first, then
again); then one day is appended for every series from outside, and once health names the new
version the same requests run again: they must return the appended day's last value. Reports
medians (curl's times, ms) before and after, and the same for a one-month window the append
leaves alone (its first request after the switch finds what the old version read, or reads it
again), and how long after the append's exit the server
served the new version, with the append's wall time and peak RSS and the server's RSS before
the append and after the switch (and its peak). `--archive` takes another cached archive
instead (the 200 000-station-year one, with `--day` the day after its end). Usage:

    python3 benches/follow.py [--no-build] [--archive DIR --day 2034-01-01]
"""

import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import append
import harness


def version(base):
    return json.loads(harness.sh("curl", "-s", f"{base}/health"))["checks"]["catalog"]["datasetVersion"]


def rounds(base, picks):
    first, again, latest = [], [], []
    for sid, pid in picks:
        url = f"{base}/stations/{sid}/parameters/{pid}/values?recent=1"
        first.append(harness.curl(url, fresh=True)[0])
        again.append(harness.curl(url, fresh=True)[0])
        latest.append(json.loads(harness.sh("curl", "-s", url))["data"][0]["timestamp"])
    return statistics.median(first) * 1e3, statistics.median(again) * 1e3, latest


def month_rounds(base, picks, month):
    """The same series' values of `month` (a datetime at its first day), a month the append
    leaves alone: first and again (medians, ms)."""
    end = (month + datetime.timedelta(days=32)).replace(day=1)
    window = f"from={month:%Y-%m-%dT00:00:00Z}&to={end:%Y-%m-%dT00:00:00Z}"
    first, again = [], []
    for sid, pid in picks:
        url = f"{base}/stations/{sid}/parameters/{pid}/values?{window}"
        first.append(harness.curl(url, fresh=True)[0])
        again.append(harness.curl(url, fresh=True)[0])
    return statistics.median(first) * 1e3, statistics.median(again) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--archive", help="a cached archive to copy instead of the 300 x 20 one")
    ap.add_argument("--day", default="2024-01-01", help="the day appended (after the archive's end)")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    base_dir = args.archive or harness.generate("append-300x20", 300, 20, start="2004-01-01")
    day = datetime.datetime.fromisoformat(args.day).replace(tzinfo=datetime.timezone.utc)
    _, parameters = append.series_of(base_dir)
    work = tempfile.mkdtemp(dir="/var/tmp")
    os.environ["HYDRO_FOLLOW_SECONDS"] = "1"
    try:
        ds = os.path.join(work, "dataset")
        subprocess.run(["cp", "-al", base_dir, ds], check=True)
        server = harness.Hydro(ds)
        try:
            picks = [(s, p) for s, p, _ in random.Random(1).sample(parameters, 100)]
            before = rounds(server.base, picks)
            past = (day - datetime.timedelta(days=400)).replace(day=1)
            before_month = month_rounds(server.base, picks, past)
            old = version(server.base)
            rss_before = server.rss_mb()
            values = os.path.join(work, "day.csv")
            rows = append.day_csv(values, parameters, day, 0)
            started = time.perf_counter()
            proc = subprocess.Popen([harness.HYDRO, "import", "--append", "--out", ds, "--values", values],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(proc.stderr.read().decode())
            appended = time.perf_counter()
            print(f"append of {rows} rows ({len(parameters)} series): {appended - started:.1f} s, "
                  f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB")
            while version(server.base) == old:
                time.sleep(0.05)
            switched = time.perf_counter() - appended
            rss_switched = server.rss_mb()
            after_month = month_rounds(server.base, picks, past)
            after = rounds(server.base, picks)
            new_days = sum(t.startswith(args.day) for t in after[2])
            print(f"served the new version {switched:.2f} s after the append exited; "
                  f"{new_days}/{len(picks)} latest values from the appended day; server RSS "
                  f"{rss_before:.0f} MiB before the append, {rss_switched:.0f} MiB once switched")
            print()
            print("| recent=1 | first ms | again ms |")
            print("|---|---:|---:|")
            print(f"| before the append | {before[0]:.2f} | {before[1]:.2f} |")
            print(f"| after the switch | {after[0]:.2f} | {after[1]:.2f} |")
            print()
            print(f"| {past:%Y-%m}, a month the append left alone | first ms | again ms |")
            print("|---|---:|---:|")
            print(f"| before the append | {before_month[0]:.2f} | {before_month[1]:.2f} |")
            print(f"| after the switch | {after_month[0]:.2f} | {after_month[1]:.2f} |")
            print(f"server RSS {server.rss_mb():.0f} MiB, peak {server.peak_rss_mb():.0f} MiB")
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
