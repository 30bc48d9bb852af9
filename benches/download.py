#!/usr/bin/env python3
"""Bulk-download benchmark: Hydro API over HTTP beside DuckDB and chDB in process and nginx
serving the identical bytes, all in one run on this machine. Prints one markdown table and
writes it to benches/out/download.md.

usage: python3 benches/download.py [--runs N] [--no-build]

Needs: curl, nginx and wrk (Debian packages nginx-light, wrk), duckdb and chdb (PyPI).
Caches generated archives under benches/cache/.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from harness import *  # noqa: F401,F403  (ROOT, CACHE, HYDRO, sh, Hydro, Nginx, curl, wrk, ...)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    build_release(args.no_build)
    os.makedirs(CACHE, exist_ok=True)
    archive = generate("archive-20x10", 20, 10)
    archive_small = generate("archive-1x10", 1, 10)
    archive_big = generate("archive-100x10", 100, 10)
    catalog = generate("catalog-100k", 100_000, 0)

    import duckdb
    import chdb

    server = Hydro(archive)
    b = server.base
    stations = json.loads(sh("curl", "-s", f"{b}/stations?types=surfaceWater&fields=id,name&limit=1"))["data"]
    sid = stations[0]["id"]
    series = f"{b}/stations/{sid}/parameters/discharge-15min/values"
    rows = json.loads(sh("curl", "-s", f"{series}?limit=0"))["meta"]["pagination"]["total"]
    files = sorted(glob.glob(os.path.join(archive, f"values/station={sid}/*.parquet")))
    runs = args.runs
    results = []  # (id, what, answer, gzip, seconds, ttfb, bytes, rows)

    downloads = [
        ("D1", "10-year series, CSV", "?format=csv", rows),
        ("D2", "10-year series, JSON", "", rows),
        ("D3", "10-year series, Arrow IPC", "?format=arrow", rows),
        ("D4", "10-year series, Parquet", "?format=parquet", rows),
        # Mid-month to mid-month, as a user picks a month: both ends cut a stored month.
        ("D5", "one month (15 Jun-14 Jul), JSON", "?from=2020-06-15T00:00:00Z&to=2020-07-14T23:45:00Z", None),
        ("D6", "recent=96, JSON", "?recent=96", 96),
    ]
    # nginx serves our own answers, byte for byte.
    static_dir = tempfile.mkdtemp()
    os.chmod(static_dir, 0o755)  # nginx workers run as another user
    for did, what, q, n in downloads:
        curl(series + q, out=os.path.join(static_dir, f"{did}.bin"))
    nginx = Nginx(static_dir)
    ref = {}  # (reference, download id): seconds in process
    paired = {}  # (download id, answer): Paired, ours against nginx
    # Ours and nginx alternate request by request, so that both see the same machine: on a
    # shared VM the speed drifts within a run. The ratio is the median of the pairs' ratios.
    # Each download twice: made afresh (`Cache-Control: no-cache`: planned, read, encoded),
    # and as a repeated request gets it, from the answer store.
    for did, what, q, n in downloads:
        for answer in ("made", "stored"):
            fresh = answer == "made"
            for gz in (False, True):
                if gz:
                    t, ttfb, size = timed_curl(series + q, runs, gz, fresh=fresh)
                else:
                    p = paired[(did, answer)] = paired_curl(
                        series + q, f"{nginx.base}/{did}.bin", runs, [server.proc.pid], nginx.pids(), fresh=fresh)
                    t, ttfb, size = p.time, p.ttfb, p.size
                results.append((did, what, answer, gz, t, ttfb, size, n))
    peak_after_series = server.peak_rss_mb()

    # What storing costs: the first request for an answer makes it, the second makes it and
    # writes the copy, the third is sent from the store (or made again while the copy is still being
    # written). Distinct keys with the same rows
    # (`to` past the end of the series, one second apart).
    storing = []
    for did, what, q, n in downloads[:4]:
        seq = [[], [], []]
        for k in range(runs):
            for step, t in zip(seq, first_second_third(keyed(series + q, k))):
                step.append(t)
        storing.append((did, what, *(statistics.median(step) for step in seq)))

    # D7, D8: the 100 000-station catalog, a `near` query and the whole list (streamed), against
    # nginx serving the same bytes. Catalog answers are made every time (the store keeps values).
    cat = Hydro(catalog)
    catalog_rss_start = cat.rss_mb()
    near = f"{cat.base}/stations?near=10.0,51.0,25"
    near_hits = json.loads(sh("curl", "-s", near + "&limit=0"))["meta"]["pagination"]["total"]
    catalog_downloads = [
        ("D7", f"near 25 km over 100 000 stations ({near_hits} hits)", near, near_hits),
        ("D8", "all 100 000 stations, JSON", f"{cat.base}/stations", 100_000),
    ]
    for did, what, url, n in catalog_downloads:
        curl(url, out=os.path.join(static_dir, f"{did}.bin"))
        for gz in (False, True):
            if gz:
                t, ttfb, size = timed_curl(url, runs, gz)
            else:
                p = paired[(did, "made")] = paired_curl(url, f"{nginx.base}/{did}.bin", runs, [cat.proc.pid], nginx.pids())
                t, ttfb, size = p.time, p.ttfb, p.size
            results.append((did, what, "made", gz, t, ttfb, size, n))
    catalog_rss_peak = cat.peak_rss_mb()
    cat.stop()

    # References in process: DuckDB and chDB.
    file_list = "[" + ",".join(f"'{f}'" for f in files) + "]"
    ts_fmt = "strftime(timezone('UTC', timestamp), '%Y-%m-%dT%H:%M:%S+00:00')"
    duck_sql = f"select {ts_fmt} as timestamp, value, quality from read_parquet({file_list}) where parameter = 'discharge-15min' order by 1"
    tmp = tempfile.mkdtemp()
    con = duckdb.connect()
    ref[("duckdb", "D1")] = timed(lambda: con.execute(f"copy ({duck_sql}) to '{tmp}/d.csv' (header)"), runs)
    ref[("duckdb", "D2")] = timed(lambda: con.execute(f"copy ({duck_sql}) to '{tmp}/d.json' (format json, array true)"), runs)
    glob_path = os.path.join(archive, f"values/station={sid}/*.parquet")
    ch_sql = (f"select formatDateTime(timestamp, '%Y-%m-%dT%H:%i:%S+00:00', 'UTC') as timestamp, value, toString(quality) as quality "
              f"from file('{glob_path}', Parquet) where parameter = 'discharge-15min' order by timestamp")
    ref[("chdb", "D1")] = timed(lambda: chdb.query(ch_sql, "CSVWithNames").bytes(), runs)
    ref[("chdb", "D2")] = timed(lambda: chdb.query(ch_sql, "JSONEachRow").bytes(), runs)

    # Small requests: one station's JSON, ours vs nginx with the same bytes.
    small_url = f"{b}/stations/{sid}"
    curl(small_url, out=os.path.join(static_dir, "small.json"))
    small = []
    for c, fresh in ((1, False), (16, False), (64, False), (1, True), (16, True)):
        ours = wrk(small_url, c, fresh=fresh)
        theirs = wrk(f"{nginx.base}/small.json", c, fresh=fresh)
        small.append((f"{c}, a new connection each request" if fresh else str(c), ours, theirs))
    nginx.stop()

    # recent=1 as the archive grows: 10, 200 and 1 000 station-years.
    def recent_one(base):
        return wrk(f"{base}{series_path(base)}?recent=1", 1, 3)

    recent = {}
    for years, data in ((10, archive_small), (1000, archive_big)):
        other = Hydro(data)
        recent[years] = recent_one(other.base)
        other.stop()
    recent[200] = recent_one(b)

    # Peak RSS while streaming the whole archive, 4 downloads at a time.
    all_stations = json.loads(sh("curl", "-s", f"{b}/stations?fields=id,parameters&include=parameters"))["data"]
    urls = [f"{b}/stations/{s['id']}/parameters/{p['id']}/values?format=csv" for s in all_stations for p in s["parameters"]]
    rss_samples = []
    start = time.perf_counter()
    procs = []
    total_bytes = 0
    for u in urls:
        procs.append(subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-H", "Cache-Control: no-cache", "-w", "%{size_download}", u],
                                      stdout=subprocess.PIPE, text=True))
        if len(procs) >= 4:
            total_bytes += int(procs.pop(0).communicate()[0])
            rss_samples.append(server.rss_mb())
    for p in procs:
        total_bytes += int(p.communicate()[0])
    archive_secs = time.perf_counter() - start
    peak_total = server.peak_rss_mb()
    server.stop()

    # The table.
    lines = []
    lines.append(f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; date {datetime.date.today()}; "
                 f"command: `python3 benches/download.py --runs {runs}`; medians of {runs} runs after one warm-up; "
                 f"ours and nginx alternate request by request, ours/nginx is the median of the pairs' ratios.")
    lines.append(f"Series: station {stations[0]['name']}, discharge-15min, {rows} rows, 10 years.\n")
    lines.append("Answer *made*: requested with `Cache-Control: no-cache`, planned, read and encoded anew, as "
                 "the first request for it is. *Stored*: a plain repeated request, sent from the answer store.\n")
    lines.append("| id | download | answer | gzip | time ms | TTFB ms | MB | rows/s | MB/s | nginx ms | ours/nginx | DuckDB ms | ours/DuckDB | chDB ms | ours/chDB |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for did, what, answer, gz, t, ttfb, size, n in results:
        def ratio(r, paired=None):
            return ("%.1f" % (r * 1e3), "%.2f" % (paired or t / r)) if r and not gz else ("", "")
        p = paired.get((did, answer))
        ng = ratio(p and p.ref_time, p and p.ratio)
        du, ch = ratio(ref.get(("duckdb", did))), ratio(ref.get(("chdb", did)))
        rps = f"{n / t:,.0f}" if n else ""
        lines.append(f"| {did} | {what} | {answer} | {'on' if gz else 'off'} | {t * 1e3:.1f} | {ttfb * 1e3:.1f} | {size / 1e6:.2f} | {rps} | {size / 1e6 / t:.0f} | "
                     f"{ng[0]} | {ng[1]} | {du[0]} | {du[1]} | {ch[0]} | {ch[1]} |")
    lines.append("\nWhere the time goes (gzip off, the same pairs as above): time to first byte and after it as curl "
                 "sees them, and the server's CPU time a request (all its threads, nginx's workers and master; "
                 "`/proc/PID/task/*/schedstat` over the pairs; the kernel charges loopback network work to whichever "
                 "thread it interrupts, so the same work can count 1–2 ms apart between runs). Both servers share the "
                 "2 cores with curl:\n")
    lines.append("| id | answer | TTFB ms | nginx TTFB ms | after first byte ms | nginx after ms | server CPU ms | nginx CPU ms |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for (did, answer), p in paired.items():
        lines.append(f"| {did} | {answer} | {p.ttfb * 1e3:.2f} | {p.ref_ttfb * 1e3:.2f} | {p.after * 1e3:.2f} | "
                     f"{p.ref_after * 1e3:.2f} | {p.cpu:.2f} | {p.ref_cpu:.2f} |")
    lines.append("\nWhat storing costs: an answer's first request makes it, the second makes it and writes the copy, "
                 f"the third is sent from the store, or made again if the copy is still being written (medians over {runs} distinct keys with the same rows):\n")
    lines.append("| id | download | first ms | second ms | third ms |")
    lines.append("|---|---|---|---|---|")
    for did, what, first, second, third in storing:
        lines.append(f"| {did} | {what} | {first * 1e3:.1f} | {second * 1e3:.1f} | {third * 1e3:.1f} |")
    lines.append("\nSmall requests (`GET /v1/stations/{id}`, wrk 5 s; keep-alive, or `Connection: close` for a new "
                 "connection each request) vs nginx serving the same bytes:\n")
    lines.append("| connections | ours req/s | p50 ms | p99 ms | nginx req/s | ours/nginx |")
    lines.append("|---|---|---|---|---|---|")
    for c, ours, theirs in small:
        lines.append(f"| {c} | {ours[0]:,.0f} | {(ours[1] or 0) * 1e3:.2f} | {(ours[2] or 0) * 1e3:.2f} | {theirs[0]:,.0f} | {ours[0] / theirs[0]:.2f} |")
    lines.append("\n`recent=1` as the archive grows (wrk, 1 connection, 3 s):\n")
    lines.append("| station-years | req/s | p50 ms | p99 ms |")
    lines.append("|---|---|---|---|")
    for years in sorted(recent):
        r = recent[years]
        lines.append(f"| {years:,} | {r[0]:,.0f} | {(r[1] or 0) * 1e3:.2f} | {(r[2] or 0) * 1e3:.2f} |")
    lines.append(f"\nPeak server RSS: {peak_after_series:.0f} MB after the series downloads; {peak_total:.0f} MB after streaming the whole "
                 f"archive ({len(urls)} series, {total_bytes / 1e6:.0f} MB of CSV, 4 at a time, {archive_secs:.1f} s; "
                 f"RSS while streaming {min(rss_samples):.0f}–{max(rss_samples):.0f} MB). Catalog server (100 000 stations): "
                 f"{catalog_rss_start:.0f} MB at start, peak {catalog_rss_peak:.0f} MB after D7 and D8.")
    text = "\n".join(lines)
    print(text)
    write_results(text)


def write_results(text):
    """Writes the whole table to benches/out/download.md; the current figures of
    benches/RESULTS.md are taken from it by hand (one row a figure)."""
    out = os.path.join(ROOT, "benches", "out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "download.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
