#!/usr/bin/env python3
"""What the answer store costs, two or more builds side by side: for each of `--runs` distinct
keys with the same rows (the 10-year series of the 20-station bench archive, `to` past its
end, one second apart), the first request (made), the second (made, and its copy written to
the store) and the third (sent from the store, or made again while the copy is still being
written), the builds taking turns key by key. Prints the medians per build.

    python3 benches/storing.py --format json --runs 21 /tmp/old-hydro /tmp/new-hydro
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", default="csv", choices=["csv", "json", "arrow", "parquet"])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("builds", nargs="+")
    args = ap.parse_args()
    archive = h.generate("archive-20x10", 20, 10)
    servers = [h.Hydro(archive, b) for b in args.builds]
    try:
        path = h.series_path(servers[0].base) + f"?format={args.format}"
        times = [[[], [], []] for _ in servers]
        for k in range(args.runs):
            for s, steps in zip(servers, times):
                for step, t in zip(steps, h.first_second_third(h.keyed(s.base + path, k))):
                    step.append(t * 1e3)
        print(f"| build | {args.format}: first ms | second ms | third ms |")
        print("|---|---|---|---|")
        for build, steps in zip(args.builds, times):
            print(f"| {build} | " + " | ".join(f"{statistics.median(t):.1f}" for t in steps) + " |")
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
