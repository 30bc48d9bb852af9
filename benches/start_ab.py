"""Start time of builds side by side: each `hydro serve` on the same archive, from launch to
the first answer of `/v1/health`, and its RSS then (from the kernel); the builds take turns.

    python3 benches/start_ab.py ARCHIVE OLD_BINARY NEW_BINARY [--runs 4]
"""

import argparse
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, archive):
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "serve", "--data", archive, "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{binary} exited with {proc.returncode}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health").read()
                break
            except OSError:
                time.sleep(0.005)
        seconds = time.monotonic() - t0
        with open(f"/proc/{proc.pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) // 1024
        return seconds, rss
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("archive")
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--runs", type=int, default=4)
    args = ap.parse_args()
    for _ in range(args.runs):
        for binary in args.binaries:
            seconds, rss = start(binary, args.archive)
            print(f"{binary}: {seconds:.2f} s, {rss} MiB", flush=True)


if __name__ == "__main__":
    main()
