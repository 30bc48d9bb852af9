#!/usr/bin/env python3
"""Versions you can cite, measured on the 300-station x 20-year archive of 15-minute
values (6 000 station-years, as benches/append.py makes it; a hard-linked copy is appended to):

1. A day of appends: 24 appends of one hour of values for every series, each a version.
2. `changedSince` the version before them, for every water-level series in one Parquet answer
   (`/v1/values?parameters=water-level-15min&changedSince=…`), against the full download of
   the same series (the same URL without it). The changes are checked: as many rows as the
   appends wrote for those series. Target: at least 100x faster.
3. Opening a past version: the first answer `asOf` a version not open yet (its catalog and
   files table loaded), its time against the same request of the current version, and what it
   holds (`/metrics`, the server's RSS before and after). Target: under 1 s.
4. A 10-year download (CSV) `asOf` the first version against the current version's, once
   opened, alternating. Target: within 1.2x.

Every request says `Cache-Control: no-cache`; times are curl's (`time_total`), medians. Usage:

    python3 benches/versions.py [--no-build] [--runs N]
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
from append import series_of

PARAMETER = "water-level-15min"


def hour_csv(path, parameters, hour):
    """One hour of values of every series (4 a 15-minute series)."""
    rows = 0
    with open(path, "w") as f:
        f.write("stationId,parameterId,timestamp,value,quality\n")
        for station, parameter, interval in parameters:
            step = 15 if interval == "PT15M" else 60 if interval == "PT1H" else None
            if step is None:
                continue
            for k in range(0, 60, step):
                t = hour + datetime.timedelta(minutes=k)
                f.write(f"{station},{parameter},{t.strftime('%Y-%m-%dT%H:%M:%SZ')},"
                        f"{100 + (hash((station, parameter, t)) % 10000) / 100:.2f},unchecked\n")
                rows += 1
    return rows


def serving(base):
    return json.loads(harness.sh("curl", "-s", f"{base}/"))["data"]["datasetVersion"]


def metric(base, name):
    text = harness.sh("curl", "-s", base.replace("/v1", "/metrics"))
    return next(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    harness.build_release(args.no_build)
    base = harness.generate("append-300x20", 300, 20, start="2004-01-01")
    _, parameters = series_of(base)
    work = tempfile.mkdtemp(dir="/var/tmp")
    h = None
    try:
        ds = os.path.join(work, "dataset")
        subprocess.run(["cp", "-al", base, ds], check=True)
        h = harness.Hydro(ds)
        first = serving(h.base)

        # 1. A day of appends.
        day = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
        written = 0
        started = time.perf_counter()
        for hour in range(24):
            values = os.path.join(work, "hour.csv")
            rows = hour_csv(values, parameters, day + datetime.timedelta(hours=hour))
            written += rows
            subprocess.run([harness.HYDRO, "import", "--append", "--out", ds, "--values", values],
                           check=True, capture_output=True)
        appends = time.perf_counter() - started
        newest = json.load(open(os.path.join(ds, "manifest.json")))["version"]
        while serving(h.base) != newest:
            time.sleep(0.2)
        print(f"a day of appends: 24 versions, {written} rows, {appends:.1f} s ({appends / 24:.2f} s each)",
              flush=True)

        # 2. changedSince against the full download of the same series.
        full = f"{h.base}/values?parameters={PARAMETER}&format=parquet"
        changes = f"{full}&changedSince={first}"
        out = os.path.join(work, "changes.parquet")
        harness.curl(changes, fresh=True, out=out)
        got = pq.read_table(out)
        want = sum(1 for s, p, _ in parameters if p == PARAMETER) * 24 * 4
        assert got.num_rows == want, (got.num_rows, want)
        # curl's own times (no process start in them); the small answer asked more often.
        quick, _, _ = harness.timed_curl(changes, 5 * args.runs, fresh=True)
        whole, _, size = harness.timed_curl(full, args.runs, fresh=True)
        print(f"changedSince a day of appends, {want} rows of {want // 96} series (Parquet): "
              f"{quick * 1000:.1f} ms; full download of the same series ({size / 1e9:.2f} GB): "
              f"{whole:.2f} s ({whole / quick:.0f}x)", flush=True)

        # 3. Opening a past version (one not opened yet: the first append's).
        listed = json.loads(harness.sh("curl", "-s", f"{h.base}/versions?format=json"))["data"]
        second = next(v["id"] for v in listed if v["generation"] == listed[-1]["generation"] + 1)
        probe = f"{h.base}/stations?limit=1"
        rss = h.rss_mb()
        opened = harness.curl(f"{probe}&asOf={second}", fresh=True)[0]
        current = harness.timed(lambda: harness.curl(probe, fresh=True), args.runs)
        print(f"opening a past version of {len(parameters)} series, 6 000 station-years: first answer "
              f"{opened * 1000:.0f} ms (the current version's {current * 1000:.1f} ms); RSS {rss:.0f} -> "
              f"{h.rss_mb():.0f} MiB; hydro_past_versions_memory_bytes "
              f"{metric(h.base, 'hydro_past_versions_memory_bytes') / 2**20:.1f} MiB", flush=True)

        # 4. A 10-year download asOf the first version, once opened.
        station = json.loads(harness.sh("curl", "-s", f"{h.base}/stations?types=surfaceWater&fields=id&limit=1"))["data"][0]["id"]
        ten = (f"{h.base}/stations/{station}/parameters/{PARAMETER}/values?from=2014-01-01T00:00:00Z"
               f"&to=2023-12-31T23:45:00Z&format=csv")
        t = harness.alternate(args.runs,
                              current=lambda: harness.curl(ten, fresh=True),
                              as_of=lambda: harness.curl(f"{ten}&asOf={first}", fresh=True))
        print(f"10-year CSV download: current version {t['current'] * 1000:.0f} ms, asOf the first "
              f"{t['as_of'] * 1000:.0f} ms ({t['as_of'] / t['current']:.2f}x)")
    finally:
        if h is not None:
            h.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
