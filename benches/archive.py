#!/usr/bin/env python3
"""A large archive against a small one, side by side in one run: what grows with the archive
and what must not.

Generates (once, cached in benches/cache) an archive of 10 station-years (10 stations x 1 year)
and one of --stations x --years station-years (default 5 000 x 20 = 100 000), both hourly (so
that a month is as many rows in both), records how long `hydro generate` took and its peak RSS, then starts a server on each
and reports
  - seconds from start until /v1/health answers, and RSS then (the kernel's figures);
  - medians of requests alternating between the two servers, each to a random station:
    `recent=1`, a one-month window, and a station list page (limit=5&offset=3), with the
    ratio large/small of each pair's times, once every series' newest value is known (given
    by the parameters table, or found by a pass at start for tables without them; timed). Each
    request runs in two rounds over the same stations: first (its files not read before, as
    for a station nobody asked for lately: each kind has stations of its own on the large
    archive, and the small archive's server starts again before every 10 requests, one to
    each of its stations) and again (footers and handles cached);
  - RSS after --many random series requests (recent=1) on the large archive.
Usage:

    python3 benches/archive.py [--no-build] [--stations 5000] [--years 20] [--runs 200]
                               [--archive DIR] [--cold] [--month 2014-06]
"""

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import time

import harness
from first_ab import month_window


def generate_measured(name, stations, years, interval, start="2014-01-01"):
    """harness.generate, with the generator's wall time and peak RSS when it had to run."""
    out = os.path.join(harness.CACHE, f"{name}-{harness.LAYOUT}")
    if os.path.exists(os.path.join(out, "manifest.json")):
        return out, None
    started = time.perf_counter()
    proc = subprocess.Popen([harness.HYDRO, "generate", "--out", out, "--stations", str(stations),
                             "--years", str(years), "--seed", "1", "--start", start,
                             "--interval", interval], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return out, (time.perf_counter() - started, usage.ru_maxrss / 1024)


def drop_kernel_caches():
    """Empties the kernel's page cache and its cache of directory entries and inodes, so that the next
    reads of either archive come from disk: a 10-station archive's files otherwise always sit in
    the cache, and a large one's only where something read them lately."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def start(data):
    """A server on `data`; returns it with seconds until /v1/health answered and RSS (MiB)."""
    t = time.perf_counter()
    server = harness.Hydro(data)
    while True:
        try:
            body = harness.sh("curl", "-sf", f"{server.base}/health")
            assert json.loads(body)["status"] == "ok"
            break
        except subprocess.CalledProcessError:
            time.sleep(0.02)
    server.healthy_at = time.perf_counter()
    return server, server.healthy_at - t, server.rss_mb()


def warmed_up(server):
    """Seconds from /v1/health answering until the server's pass at start has found every
    series' newest value (`hydro_newest_values_known` on /metrics unchanged for a second), and
    RSS (MiB) then."""
    metrics = server.base.removesuffix("/v1") + "/metrics"

    def known():
        for line in harness.sh("curl", "-sf", metrics).splitlines():
            if line.startswith("hydro_newest_values_known "):
                return int(line.split()[1])
        raise SystemExit("no hydro_newest_values_known on /metrics")

    last, steady = known(), 0
    while steady < 10:
        time.sleep(0.1)
        now = known()
        steady = steady + 1 if now == last and now > 0 else 0
        last = now
    return time.perf_counter() - server.healthy_at - 1.0, server.rss_mb()


def series(base, count, rng):
    """`count` random (station, parameter) pairs of the archive behind `base`."""
    ids = [s["id"] for s in json.loads(harness.sh("curl", "-s", f"{base}/stations?fields=id&limit=100000"))["data"]]
    out = []
    for sid in rng.sample(ids, min(count, len(ids))):
        params = json.loads(harness.sh("curl", "-s", f"{base}/stations/{sid}/parameters?fields=id"))["data"]
        out.append((sid, params[0]["id"]))
    return out, len(ids)


def many_series_requests(base, count, rng):
    """`count` requests of `recent=1` of random series (a random station, one of its
    parameters, listed once a station), on one kept-alive connection: (seconds, {status:
    count}, the lists included)."""
    ids = [s["id"] for s in json.loads(harness.sh("curl", "-s", f"{base}/stations?fields=id&limit=100000"))["data"]]
    host, port = base.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port))

    def fetched(path):
        conn.request("GET", path, headers={"Cache-Control": "no-cache"})
        response = conn.getresponse()
        return response.status, response.read()

    parameters = {}
    statuses = {}
    started = time.perf_counter()
    for _ in range(count):
        sid = rng.choice(ids)
        if sid not in parameters:
            _, body = fetched(f"/v1/stations/{sid}/parameters?fields=id")
            parameters[sid] = [p["id"] for p in json.loads(body)["data"]]
        status, _ = fetched(f"/v1/stations/{sid}/parameters/{rng.choice(parameters[sid])}/values?recent=1")
        statuses[status] = statuses.get(status, 0) + 1
    return time.perf_counter() - started, statuses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--stations", type=int, default=5000)
    ap.add_argument("--years", type=int, default=20)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--archive", help="the large archive to measure instead of the generated "
                    "one of --stations x --years (e.g. a hard-linked copy a later build appended to)")
    ap.add_argument("--cold", action="store_true",
                    help="drop the kernel's page cache before each pair of first requests (root), "
                    "so that both archives' month files are read from disk")
    ap.add_argument("--month", default="2014-06",
                    help="the one-month window (YYYY-MM), within the large archive's years; the "
                    "small archive is generated for that year")
    ap.add_argument("--many", type=int, default=10000,
                    help="random series requests on the large archive before its RSS is read")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    year = args.month[:4]
    small_name = "archive-small-1h" if year == "2014" else f"archive-small-1h-{year}"
    small, small_made = generate_measured(small_name, 10, 1, "PT1H", f"{year}-01-01")
    if args.archive:
        big, big_made = args.archive, None
    else:
        big, big_made = generate_measured(f"archive-{args.stations}x{args.years}", args.stations,
                                          args.years, "PT1H")
    if big_made:
        print(f"generate {args.stations} x {args.years}: {big_made[0]:.0f} s, peak RSS {big_made[1]:.0f} MiB")
    manifest = json.load(open(os.path.join(big, "manifest.json")))
    print(f"large archive: {manifest['counts']['stations']} stations, {manifest['counts']['files']} files, "
          f"{manifest['counts']['values']} values")

    rng = random.Random(1)
    servers = {}
    for name, data in (("small", small), ("large", big)):
        server, seconds, rss = start(data)
        servers[name] = server
        print(f"{name}: /v1/health after {seconds:.2f} s, RSS {rss:.0f} MiB")
    # The rounds below measure a server past its start: its pass over every station (each
    # series' newest value) done.
    for name, server in servers.items():
        seconds, rss = warmed_up(server)
        print(f"{name}: every series' newest value found {seconds:.1f} s after /v1/health, RSS {rss:.0f} MiB")
    try:
        # Each request kind gets stations of its own on the large archive, so that its first
        # round finds nothing of theirs decoded or read by the kinds before it.
        picks = {name: series(s.base, args.runs * 3, rng) for name, s in servers.items()}
        requests = {
            "recent=1": lambda base, sid, pid: f"{base}/stations/{sid}/parameters/{pid}/values?recent=1",
            "one month": lambda base, sid, pid: f"{base}/stations/{sid}/parameters/{pid}/values?{month_window(args.month)}",
            "station page": lambda base, sid, pid: f"{base}/stations?limit=5&offset=3",
        }
        print()
        print("| request | round | small ms | large ms | large / small |")
        print("|---|---|---:|---:|---:|")
        for kind, (label, url) in enumerate(requests.items()):
            for round_name in ("first", "again"):
                pairs = []
                for i in range(args.runs):
                    if round_name == "first" and i % len(picks["small"][0]) == 0:
                        # The small archive has 10 stations: its server starts again before
                        # each 10 first requests, so that each is its station's first.
                        servers["small"].stop()
                        servers["small"] = start(small)[0]
                    if round_name == "first" and args.cold:
                        drop_kernel_caches()
                    times = []
                    for name in ("small", "large"):
                        base = servers[name].base
                        chosen = picks[name][0]
                        if name == "large":
                            chosen = chosen[kind * args.runs:(kind + 1) * args.runs]
                        sid, pid = chosen[i % len(chosen)]
                        times.append(harness.curl(url(base, sid, pid), fresh=True)[0])
                    pairs.append(times)
                med = statistics.median
                ratio = med(l / s for s, l in pairs)
                print(f"| {label} | {round_name} | {med(p[0] for p in pairs) * 1e3:.2f} "
                      f"| {med(p[1] for p in pairs) * 1e3:.2f} | {ratio:.2f} |", flush=True)
        for name, s in servers.items():
            print(f"{name}: RSS after the requests {s.rss_mb():.0f} MiB")
        if args.many:
            large = servers["large"]
            seconds, statuses = many_series_requests(large.base, args.many, rng)
            print(f"large: {args.many} random series requests (recent=1) in {seconds:.1f} s, "
                  f"statuses {statuses}; RSS then {large.rss_mb():.0f} MiB, peak {large.peak_rss_mb():.0f} MiB")
    finally:
        for s in servers.values():
            s.stop()


if __name__ == "__main__":
    sys.exit(main())
