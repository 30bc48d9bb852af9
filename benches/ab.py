"""Two or more builds side by side: each serves the 10-year series of the 20-station bench
archive (or an archive of its own) and nginx serves the same bytes; requests go round robin
(nginx, build 1, build 2, ...), so that all see the same machine. Prints per build the median
time, the median of its ratios to nginx, and the server's CPU time per request (user + system,
from /proc), which is steadier than wall time on a shared VM.

    python3 benches/ab.py --format csv --runs 41 /tmp/old-hydro /tmp/new-hydro@/tmp/new-archive

A build is `BINARY` or `BINARY@ARCHIVE` (for a layout change: an archive the build generated).
Answers must be byte for byte the same as the first build's, except for Parquet, whose bytes
follow the layout.
"""

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", default="csv", choices=["csv", "json", "arrow", "parquet"])
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("builds", nargs="+")
    args = ap.parse_args()
    default_archive = h.generate("archive-20x10", 20, 10)
    servers = []
    for build in args.builds:
        binary, _, archive = build.partition("@")
        servers.append(h.Hydro(archive or default_archive, binary))
    try:
        base = servers[0].base
        path = h.series_path(base) + f"?format={args.format}"
        static = tempfile.mkdtemp()
        os.chmod(static, 0o755)  # nginx workers run as another user
        first = os.path.join(static, "answer")
        h.curl(base + path, out=first, fresh=True)
        for s in servers[1:]:
            other = os.path.join(static, "other")
            h.curl(s.base + path, out=other, fresh=True)
            # JSON and XML answers name the server's own address (meta.baseUrl, links).
            same = (open(other, "rb").read().replace(s.base.encode(), b"BASE")
                    == open(first, "rb").read().replace(base.encode(), b"BASE"))
            if not same and args.format != "parquet":
                sys.exit(f"{s.proc.args[0]} answers other bytes than {args.builds[0]}")
        nginx = h.Nginx(static)
        try:
            times = [[] for _ in servers]
            ratios = [[] for _ in servers]
            cpu = [0.0 for _ in servers]
            theirs = []
            for s in servers:
                h.curl(s.base + path, fresh=True)
            h.curl(f"{nginx.base}/answer")
            for _ in range(args.runs):
                t_nginx = h.curl(f"{nginx.base}/answer")[0]
                theirs.append(t_nginx)
                for i, s in enumerate(servers):
                    before = h.cpu_ms(s.proc.pid)
                    t = h.curl(s.base + path, fresh=True)[0]
                    cpu[i] += h.cpu_ms(s.proc.pid) - before
                    times[i].append(t)
                    ratios[i].append(t / t_nginx)
        finally:
            nginx.stop()
    finally:
        for s in servers:
            s.stop()
    med = statistics.median
    print(f"{args.format}, {os.path.getsize(first)} bytes, {args.runs} rounds: nginx {med(theirs) * 1000:.2f} ms")
    for i, build in enumerate(args.builds):
        print(f"  {build}: {med(times[i]) * 1000:.2f} ms, {med(ratios[i]):.2f}x nginx, "
              f"CPU {cpu[i] / args.runs:.2f} ms/request")


if __name__ == "__main__":
    main()
