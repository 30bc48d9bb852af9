#!/usr/bin/env python3
"""What `hydro import --append` costs against the archive it changes.

Takes a 300-station x 20-year archive (15-minute values; generated once into benches/cache),
makes a hard-linked copy of it (an append writes new files and replaces the manifest by a
rename, so the cached archive stays as it was), then appends
  1. one new day of values for every series (96 values a 15-minute series, 1 a daily one), and
  2. the same day again with other values and flags: every row a correction,
reporting wall time, peak RSS (the kernel's ru_maxrss), the bytes and files the publish wrote,
and the archive's size. Usage:

    python3 benches/append.py [--no-build]
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

import harness


def written_since(root, before):
    """Bytes and files under `root` that are not in `before` (paths) or were replaced."""
    total, count = 0, 0
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            st = os.stat(p)
            if p not in before or before[p] != st.st_ino:
                total += st.st_size
                count += 1
    return total, count


def snapshot(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[p] = os.stat(p).st_ino
    return out


def day_csv(path, parameters, day, salt):
    rows = 0
    with open(path, "w") as f:
        f.write("stationId,parameterId,timestamp,value,quality\n")
        for station, parameter, interval in parameters:
            step = 15 if interval == "PT15M" else 60 if interval == "PT1H" else 1440
            for k in range(0, 1440, step):
                t = day + datetime.timedelta(minutes=k)
                value = 100 + (hash((station, parameter, k, salt)) % 10000) / 100
                f.write(f"{station},{parameter},{t.strftime('%Y-%m-%dT%H:%M:%SZ')},{value:.2f},"
                        f"{'unchecked' if salt == 0 else 'good'}\n")
                rows += 1
    return rows


def series_of(base):
    """(station, parameter, interval) of every series of the archive at `base`."""
    manifest = json.load(open(os.path.join(base, "manifest.json")))
    table = pq.read_table(os.path.join(base, manifest["catalog"]["parameters"]),
                          columns=["station_id", "id", "interval"]).to_pylist()
    return manifest, [(r["station_id"], r["id"], r["interval"]) for r in table]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    base = harness.generate("append-300x20", 300, 20, start="2004-01-01")
    manifest, parameters = series_of(base)
    work = tempfile.mkdtemp(dir="/var/tmp")
    try:
        ds = os.path.join(work, "dataset")
        subprocess.run(["cp", "-al", base, ds], check=True)
        archive_bytes = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(ds) for n in ns)
        print(f"archive: {manifest['counts']['values']} values in {manifest['counts']['files']} files, "
              f"{archive_bytes / 1e9:.2f} GB; {len(parameters)} series")
        print()
        print("| append | rows | wall s | peak RSS MiB | written MB | files written | written / archive |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        day = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
        for label, salt in (("a new day for every series", 0), ("the same day corrected", 1)):
            values = os.path.join(work, f"day-{salt}.csv")
            rows = day_csv(values, parameters, day, salt)
            before = snapshot(ds)
            started = time.perf_counter()
            proc = subprocess.Popen([harness.HYDRO, "import", "--append", "--out", ds, "--values", values],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(proc.stderr.read().decode())
            said = proc.stdout.read().decode().strip().splitlines()[-1]
            written, files = written_since(ds, before)
            print(f"| {label} | {rows} | {seconds:.2f} | {usage.ru_maxrss / 1024:.0f} | {written / 1e6:.1f} "
                  f"| {files} | {written / archive_bytes:.4f} |", flush=True)
            print(f"<!-- {said} -->")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
