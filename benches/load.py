#!/usr/bin/env python3
"""Bounded load test on 127.0.0.1: small requests with wrk beside concurrent 10-year
downloads, for a fixed time, with a cap on heavy queries low enough to be hit. Reports
statuses, throughput and the server's RSS over time; fails on any status other than the
designed 200/503.

usage: python3 benches/load.py [--seconds S] [--no-build]
"""
import argparse
import collections
import json
import os
import threading
import time

from harness import Hydro, build_release, generate, sh


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    build_release(args.no_build)
    archive = generate("archive-20x10", 20, 10)
    os.environ["HYDRO_MAX_HEAVY_QUERIES"] = "4"
    server = Hydro(archive)
    b = server.base
    stations = json.loads(sh("curl", "-s", f"{b}/stations?fields=id"))["data"]
    ids = [s["id"] for s in stations]
    big = [f"{b}/stations/{i}/parameters/water-level-15min/values?format=csv" for i in ids]
    statuses = collections.Counter()
    rss = []
    stop = time.time() + args.seconds

    def downloader(k):
        n = k
        while time.time() < stop:
            url = big[n % len(big)]
            n += 3
            # Made afresh (not from the answer store): the load stays on the engine.
            code = sh("curl", "-s", "-o", "/dev/null", "-H", "Cache-Control: no-cache", "-w", "%{http_code}", url)
            statuses[code] += 1

    def sampler():
        while time.time() < stop:
            rss.append(server.rss_mb())
            time.sleep(0.5)

    threads = [threading.Thread(target=downloader, args=(k,)) for k in range(6)] + [threading.Thread(target=sampler)]
    for t in threads:
        t.start()
    wrk = sh("wrk", "-t2", "-c32", f"-d{args.seconds}s", f"{b}/stations?limit=10&fields=id,name")
    for t in threads:
        t.join()
    server.stop()
    rps = next(l for l in wrk.splitlines() if l.startswith("Requests/sec"))
    non2xx = [l for l in wrk.splitlines() if "Non-2xx" in l or "Socket errors" in l]
    print(f"small requests: {rps.strip()}; {'; '.join(l.strip() for l in non2xx) or 'all 2xx, no socket errors'}")
    print(f"downloads (6 clients, cap 4): {dict(statuses)}")
    print(f"server RSS MB over {args.seconds}s: first {rss[0]:.0f}, max {max(rss):.0f}, last {rss[-1]:.0f}")
    unexpected = {k: v for k, v in statuses.items() if k not in ("200", "503")}
    assert not unexpected and not non2xx, (unexpected, non2xx)


if __name__ == "__main__":
    main()
