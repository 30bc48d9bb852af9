#!/usr/bin/env python3
"""Every series' values of one UTC day as the archive holds them, as an import CSV: appended
again, they change no value but rewrite the day's months (and their stations' rollups), e.g.
to make a copy of an archive whose rollups are in parts for `benches/rollup_read_ab.py`.
Reads month files (`values/station=<id>/<YYYY-MM>-g<g>.parquet`; not the station-year files of
`hydro compact`) with pyarrow; outside CI.

    python3 benches/same_day.py ARCHIVE DAY OUT.csv
    e.g. python3 benches/same_day.py /var/tmp/rg-new 2023-12-31 /tmp/same.csv
"""

import csv
import datetime
import glob
import sys

import pyarrow.parquet as pq


def main():
    root, day, out = sys.argv[1], sys.argv[2], sys.argv[3]
    d = datetime.date.fromisoformat(day)
    rows = 0
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stationId", "parameterId", "timestamp", "value", "quality"])
        for path in sorted(glob.glob(f"{root}/values/station=*/{d:%Y-%m}-g*.parquet")):
            station = path.split("station=")[1].split("/")[0]
            t = pq.read_table(path, columns=["parameter", "timestamp", "value", "quality"])
            for p, ts, v, q in zip(*(t.column(c).to_pylist() for c in t.column_names)):
                if ts.date() == d:
                    # repr: the shortest text that reads back as the same double; a recorded
                    # gap has no value.
                    value = "" if v is None else repr(v)
                    w.writerow([station, p, ts.strftime("%Y-%m-%dT%H:%M:%SZ"), value, q])
                    rows += 1
    print(rows, "rows")


if __name__ == "__main__":
    sys.exit(main())
