"""Server CPU a request of two or more builds, side by side, for any values query of the
10-year series: each build serves the 20-station bench archive, `wrk` (one connection,
`Cache-Control: no-cache`, so every answer is made) runs the query for 2 s a round against each
in turn, the order reversed every other round. Small answers (`recent=N`, short windows) take
microseconds, too little for `ab.py`'s curl processes to tell apart; this counts thousands.

    python3 benches/cpuab.py "?format=json&recent=1" 6 /tmp/old-hydro /tmp/new-hydro
"""

import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    query, rounds, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    data = h.generate("archive-20x10", 20, 10)
    servers = [h.Hydro(data, b) for b in builds]
    try:
        path = h.series_path(servers[0].base) + query
        per_request = {b: [] for b in builds}
        for r in range(rounds):
            order = list(zip(builds, servers))
            if r % 2:
                order.reverse()
            for build, s in order:
                before = h.cpu_ms(s.proc.pid)
                out = subprocess.run(
                    ["wrk", "-t1", "-c1", "-d2s", "-H", "Cache-Control: no-cache", s.base + path],
                    capture_output=True, text=True, check=True,
                ).stdout
                n = int(re.search(r"(\d+) requests in", out).group(1))
                per_request[build].append((h.cpu_ms(s.proc.pid) - before) * 1000 / n)
        for b in builds:
            rounds_us = [round(x) for x in per_request[b]]
            print(f"{query}  {b}: {statistics.median(per_request[b]):.0f} us CPU/request  {rounds_us}")
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
