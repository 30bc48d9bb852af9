"""Shared pieces of the benchmark scripts: the release binary, cached archives, a server
process, curl and wrk measurements."""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "benches", "cache")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
# The cargo profile measured: `release`, or `profiling` (release with line tables, for perf's
# call stacks) when HYDRO_BENCH_PROFILE says so (benches/profile.py does).
PROFILE = os.environ.get("HYDRO_BENCH_PROFILE", "release")
HYDRO = os.path.join(TARGET, PROFILE, "hydro")


def build_release(skip):
    """Builds target/<profile>/hydro unless the caller says it is current; a binary older than
    the sources (a build in another target directory, say) is refused rather than measured."""
    if not skip:
        subprocess.run(["cargo", "build", "--profile", PROFILE, "--bin", "hydro"], cwd=ROOT, check=True)
        return
    if not os.path.exists(HYDRO) or os.path.getmtime(HYDRO) < newest_source():
        sys.exit(f"{HYDRO} is missing or older than the sources: build it (drop --no-build), "
                 "or set CARGO_TARGET_DIR to where it was built")


def newest_source():
    """The modification time of the newest file the binary is built from (tests and benches
    are not, so editing them leaves a build current)."""
    paths = [os.path.join(ROOT, "Cargo.lock")]
    for crate in (ROOT, os.path.join(ROOT, "engine"), os.path.join(ROOT, "server")):
        paths.append(os.path.join(crate, "Cargo.toml"))
        for d, _, files in os.walk(os.path.join(crate, "src")):
            paths += [os.path.join(d, f) for f in files if f.endswith(".rs")]
    return max(os.path.getmtime(p) for p in paths)


def sh(*args, **kw):
    return subprocess.run(args, check=True, text=True, capture_output=True, **kw).stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports_below_ephemeral(n):
    """`n` distinct free loopback ports picked at random below the kernel's ephemeral range
    (32768 and up): for a server that binds its parts one after another while the first ones
    already connect out (SeaweedFS), so that its own outgoing connections cannot take a port
    meant for a later part (as `tests/common/s3.rs` does)."""
    import random
    held = []
    while len(held) < n:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", random.randrange(20000, 32000)))
            held.append(s)
        except OSError:
            s.close()
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    return ports


# Bumped when the storage layout changes (codec, encodings, rollups), so that cached archives
# are regenerated rather than measured in an old layout.
LAYOUT = "lz4-p2k-vd-ft-r2-l4"


def generate(name, stations, years, start="2014-01-01", interval="PT15M"):
    out = os.path.join(CACHE, f"{name}-{LAYOUT}")
    if not os.path.exists(os.path.join(out, "manifest.json")):
        print(f"generating {name} ({stations} stations x {years} years)...", file=sys.stderr)
        sh(HYDRO, "generate", "--out", out, "--stations", str(stations), "--years", str(years), "--seed", "1",
           "--start", start, "--interval", interval)
    return out


class Hydro:
    def __init__(self, data, binary=None):
        self.port = free_port()
        self.proc = subprocess.Popen([binary or HYDRO, "serve", "--data", data, "--bind", f"127.0.0.1:{self.port}"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=os.environ | {"HYDRO_LOG": "warn"}, text=True)
        self.proc.stdout.readline()
        self.base = f"http://127.0.0.1:{self.port}/v1"

    def peak_rss_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def rss_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def curl(url, gzip=False, out="/dev/null", fresh=False):
    """(seconds, seconds to first byte, bytes). `fresh`: `Cache-Control: no-cache`, so that the
    server makes the answer anew instead of sending it from its answer store."""
    args = ["curl", "-s", "-o", out, "-w", "%{time_total} %{time_starttransfer} %{size_download} %{http_code}"]
    if gzip:
        args += ["-H", "Accept-Encoding: gzip"]
    if fresh:
        args += ["-H", "Cache-Control: no-cache"]
    total, ttfb, size, code = sh(*args, url).split()
    assert code == "200", (url, code)
    return float(total), float(ttfb), int(size)


def series_path(base):
    """The path of the series the download benchmarks fetch: 15-minute discharge of the
    archive's first surface-water station."""
    sid = json.loads(sh("curl", "-s", f"{base}/stations?types=surfaceWater&fields=id&limit=1"))["data"][0]["id"]
    return f"/stations/{sid}/parameters/discharge-15min/values"


def keyed(url, k):
    """`url` as an answer of its own (another ETag, another store key) with the same rows:
    `to` past the end of every series, `k` seconds apart."""
    return f"{url}{'&' if '?' in url else '?'}to=2099-01-01T00:{k // 60:02d}:{k % 60:02d}Z"


def first_second_third(url):
    """Seconds of three requests in a row for an answer not asked for before: made; made and
    its copy written to the answer store; sent from the store (made again if the copy is still
    being written)."""
    return [curl(url)[0] for _ in range(3)]


def timed_curl(url, runs, gzip=False, fresh=False):
    curl(url, gzip, fresh=fresh)  # warm caches once
    samples = [curl(url, gzip, fresh=fresh) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples), samples[0][2]


def cpu_ms(*pids):
    """CPU time the processes' threads have run, in ms: the scheduler's nanosecond counts
    (`/proc/PID/task/*/schedstat`), since `/proc/PID/stat` counts in 10 ms ticks, too coarse
    for requests of a few ms. Threads that have exited are not counted; the servers' live
    for their whole run."""
    total = 0
    for pid in pids:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                total += int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass
    return total / 1e6


class Paired:
    """Medians of requests to us and to the reference, alternating (see `paired_curl`)."""

    def __init__(self, pairs, cpu, ref_cpu, runs):
        med = statistics.median
        self.time = med(o[0] for o, _ in pairs)
        self.ttfb = med(o[1] for o, _ in pairs)
        self.size = pairs[0][0][2]
        self.ref_time = med(t[0] for _, t in pairs)
        self.ref_ttfb = med(t[1] for _, t in pairs)
        self.after = med(o[0] - o[1] for o, _ in pairs)
        self.ref_after = med(t[0] - t[1] for _, t in pairs)
        # The median of the pairs' ratios: steadier than a ratio of medians on a shared VM.
        self.ratio = med(o[0] / t[0] for o, t in pairs)
        # Server CPU a request, ms: everything the servers ran during the pairs, so that work
        # that ends after the response (a copy being stored) is counted too.
        self.cpu = cpu / runs
        self.ref_cpu = ref_cpu / runs


def paired_curl(ours, theirs, runs, ours_pids, theirs_pids, fresh=False):
    """Alternates a request to us and one to the reference, `runs` pairs after a warm-up of
    each, and counts what the servers' processes ran meanwhile."""
    curl(ours, fresh=fresh)
    curl(theirs)
    cpu, ref_cpu = cpu_ms(*ours_pids), cpu_ms(*theirs_pids)
    pairs = [(curl(ours, fresh=fresh), curl(theirs)) for _ in range(runs)]
    cpu, ref_cpu = cpu_ms(*ours_pids) - cpu, cpu_ms(*theirs_pids) - ref_cpu
    return Paired(pairs, cpu, ref_cpu, runs)


def timed(fn, runs):
    fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def alternate(runs, **fns):
    """Medians of `runs` rounds, each running every function once in the order given (after a
    warm-up round), so that a noisy moment weighs on all of them alike."""
    for fn in fns.values():
        fn()
    samples = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t)
    return {name: statistics.median(s) for name, s in samples.items()}


class Nginx:
    def __init__(self, root):
        self.dir = tempfile.mkdtemp()
        self.port = free_port()
        conf = os.path.join(self.dir, "nginx.conf")
        open(conf, "w").write(f"""
worker_processes 2; daemon off; pid {self.dir}/nginx.pid; error_log {self.dir}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  types {{ text/csv csv; application/json json; application/octet-stream bin; }}
  server {{ listen 127.0.0.1:{self.port}; root {root}; }} }}
""")
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", self.dir], stderr=subprocess.DEVNULL)
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        self.base = f"http://127.0.0.1:{self.port}"

    def pids(self):
        """The master and its worker processes (which do the serving)."""
        children = open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()
        return [self.proc.pid, *map(int, children)]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def wrk(url, connections, seconds=5, fresh=False):
    """requests/s, p50 and p99 seconds; `fresh`: a new TCP connection for every request."""
    close = ["-H", "Connection: close"] if fresh else []
    out = sh("wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s", "--latency", *close, url)
    rps = float(next(l for l in out.splitlines() if l.startswith("Requests/sec")).split()[1])
    lat = {}
    for l in out.splitlines():
        parts = l.split()
        if len(parts) == 2 and parts[0] in ("50%", "99%"):
            v = parts[1]
            unit = 1e-3 if v.endswith("ms") else 1e-6 if v.endswith("us") else 1.0
            lat[parts[0]] = float(v.rstrip("mus")) * unit
    return rps, lat.get("50%"), lat.get("99%")


