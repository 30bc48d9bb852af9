#!/usr/bin/env python3
"""`hydro import` of the same values as an agency writes them against our own CSV, side by side.

Makes --rows rows (default 4 M: 40 stations, one 15-minute series each) in three forms:
  - plain: our values CSV (UTF-8, `,`, RFC 3339 times with an offset);
  - wiski: a WISKI-style export as agencies send it: Latin-1, `;`, decimal commas, a metadata
    block, a block a station (`#Station;…`, `#Parameter;…`, `Datum;Uhrzeit;Wert`), local
    standard time without an offset (MEZ), -999 for missing values;
  - zrxp: the same series as ZRXP blocks (`#SANR…|*|`, `yyyyMMddHHmmss value`, UTC+1);
then imports each into a new dataset with `hydro import` (the dialect options and the mapping
file data/README.md documents), taking turns over --runs rounds, and reports each form's median
wall time, rows/s, peak RSS (the child's ru_maxrss) and its ratio to the plain CSV. Usage:

    python3 benches/import_dialects.py --hydro target/release/hydro [--rows N] [--runs 3]
        [--work DIR] [--memory 256MiB]
"""

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import time

STATIONS = 40


def run_measured(cmd):
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[:3]} failed:\n{out}\n{err[-4000:]}")
    return seconds, usage.ru_maxrss * 1024


def value(s, i):
    return round(100 + s + 30 * ((i * 7919) % 1000) / 1000, 2)


def make(work, rows):
    per = rows // STATIONS
    marker = os.path.join(work, f"made-{rows}")
    if os.path.exists(marker):
        return per * STATIONS
    start = dt.datetime(2000, 1, 1)
    step = dt.timedelta(minutes=15)
    with open(os.path.join(work, "stations.csv"), "w") as f:
        f.write("id,name,type,state,lat,lon\n")
        for s in range(STATIONS):
            f.write(f"{25800000 + s},Pegel {s},surfaceWater,NW,{50 + s * 0.05:.4f},{7 + s * 0.05:.4f}\n")
    with open(os.path.join(work, "parameters.csv"), "w") as f:
        f.write("stationId,id,name,observedProperty,unit,interval\n")
        for s in range(STATIONS):
            f.write(f"{25800000 + s},Q,Abfluss,discharge,m3/s,PT15M\n")
    with open(os.path.join(work, "mapping.toml"), "w") as f:
        f.write('[values.columns]\ndate = "Datum"\ntime = "Uhrzeit"\nvalue = "Wert"\n'
                '[values.blocks]\nstationId = "Station"\nparameterId = "Parameter"\n')
    utc = dt.timezone.utc
    mez = dt.timezone(dt.timedelta(hours=1))
    with open(os.path.join(work, "plain.csv"), "w") as plain, \
            open(os.path.join(work, "wiski.csv"), "w", encoding="latin-1") as wiski, \
            open(os.path.join(work, "export.zrxp"), "w") as zrxp:
        plain.write("stationId,parameterId,timestamp,value,quality\n")
        wiski.write("#Export;WISKI;Landesamt für Umwelt\n#Zeitzone;MEZ\n")
        for s in range(STATIONS):
            sid = 25800000 + s
            wiski.write(f"#Station;{sid};Pegel {s}\n#Parameter;Q\nDatum;Uhrzeit;Wert\n")
            zrxp.write(f"#SANR{sid}|*|SNAMEPegel {s}|*|\n#CNRQ|*|CUNITm3/s|*|RINVAL-999|*|\n"
                       "#TZUTC+1|*|\n#LAYOUT(timestamp,value)|*|\n")
            t = start
            for i in range(per):
                v = value(s, i)
                missing = i % 5000 == 17
                local = t.replace(tzinfo=mez)
                stamp = local.astimezone(utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                if missing:
                    plain.write(f"{sid},Q,{stamp},,missing\n")
                    wiski.write(f"{t:%d.%m.%Y};{t:%H:%M};-999\n")
                    zrxp.write(f"{t:%Y%m%d%H%M%S} -999\n")
                else:
                    plain.write(f"{sid},Q,{stamp},{v},good\n")
                    wiski.write(f"{t:%d.%m.%Y};{t:%H:%M};{str(v).replace('.', ',')}\n")
                    zrxp.write(f"{t:%Y%m%d%H%M%S} {v}\n")
                t += step
    open(marker, "w").close()
    return per * STATIONS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hydro", required=True)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="/var/tmp/hydro-import-dialects")
    ap.add_argument("--memory", default="256MiB")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = make(args.work, args.rows)
    w = args.work
    common = ["--stations", f"{w}/stations.csv", "--parameters", f"{w}/parameters.csv",
              "--memory", args.memory]
    forms = {
        "plain": ["--values", f"{w}/plain.csv"],
        "wiski": ["--mapping", f"{w}/mapping.toml", "--encoding", "latin1", "--time-zone", "MEZ",
                  "--missing", "-999", "--quality", "good", "--values", f"{w}/wiski.csv"],
        "zrxp": ["--quality", "good", "--values", f"{w}/export.zrxp"],
    }
    taken = {name: [] for name in forms}
    for _ in range(args.runs):
        for name, options in forms.items():
            out = os.path.join(w, f"out-{name}")
            shutil.rmtree(out, ignore_errors=True)
            taken[name].append(run_measured([args.hydro, "import", "--out", out] + common + options))
    sizes = {name: os.path.getsize(o[-1]) for name, o in forms.items()}
    base = statistics.median(s for s, _ in taken["plain"])
    print(f"{rows:,} rows, {STATIONS} stations, {args.runs} rounds taking turns, --memory {args.memory}")
    print(f"{'form':6} {'input MB':>9} {'median s':>9} {'rows/s':>11} {'peak RSS MiB':>13} {'x plain':>8}")
    for name, runs in taken.items():
        seconds = statistics.median(s for s, _ in runs)
        peak = max(r for _, r in runs) / 2**20
        print(f"{name:6} {sizes[name] / 1e6:9.1f} {seconds:9.2f} {rows / seconds:11,.0f} {peak:13.0f} "
              f"{seconds / base:8.2f}")


if __name__ == "__main__":
    main()
