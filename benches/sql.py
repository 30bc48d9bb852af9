#!/usr/bin/env python3
"""SQL over the archive: `/v1/sql` against DuckDB over the same files, side by side in one run.

On the 300-station x 20-year archive (15-minute values, `append.py`'s), each query below is
asked of `/v1/sql` (an Arrow IPC answer, read whole by the client) and run by DuckDB in
process (threads = 2, the machine's cores) over the current version's value files as
`docs/on-disk-layout.md` reads them (Hive partitioning, `station` as text), with the stations
table loaded from the API's Parquet list. Runs alternate; medians. Rows are compared (count).
Targets (issue 55): the queries that prune (one station, a time range, a state) and the
per-station aggregates no slower than DuckDB; whole-archive joins and window functions within
2x.
Usage:

    python3 benches/sql.py [--no-build] [--runs N]
"""

import argparse
import io
import json
import os
import statistics
import tempfile
import time
import urllib.parse
import urllib.request

import duckdb
import pyarrow.ipc as ipc
import harness


def ours(base, statement):
    url = f"{base}/sql?format=arrow&q={urllib.parse.quote(statement)}"
    t = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        table = ipc.open_stream(io.BytesIO(r.read())).read_all()
    return time.perf_counter() - t, table.num_rows


def theirs(con, statement):
    t = time.perf_counter()
    rows = con.sql(statement).to_arrow_table().num_rows
    return time.perf_counter() - t, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    harness.build_release(args.no_build)
    data = harness.generate("append-300x20", 300, 20, start="2004-01-01")
    os.environ["HYDRO_SQL_TIMEOUT_SECS"] = "600"
    h = harness.Hydro(data)
    try:
        stations = json.loads(harness.sh("curl", "-s", f"{h.base}/stations?limit=1000&fields=id,state"))["data"]
        station = stations[0]["id"]
        state = stations[0]["state"]
        con = duckdb.connect()
        con.execute("SET threads = 2")
        con.execute("SET TimeZone = 'UTC'")
        manifest = json.load(open(os.path.join(data, "manifest.json")))
        files = con.execute(f"SELECT list(DISTINCT '{data}/' || path) FROM '{data}/{manifest['catalog']['files']}'"
                            ).fetchone()[0]
        listed = ", ".join(f"'{f}'" for f in files)
        con.execute(f"CREATE VIEW v AS SELECT * FROM read_parquet([{listed}], hive_partitioning = true, "
                    "hive_types = {'station': VARCHAR})")
        con.execute("CREATE TABLE s (id VARCHAR, state VARCHAR)")
        con.executemany("INSERT INTO s VALUES (?, ?)", [(x["id"], x["state"]) for x in stations])
        one = f"station = '{station}' AND parameter = 'water-level-15min'"
        cases = [
            ("prunes", "a year of one series",
             f"SELECT timestamp, value FROM values WHERE {one} AND timestamp >= '2015-01-01T00:00:00Z' "
             "AND timestamp < '2016-01-01T00:00:00Z' ORDER BY timestamp",
             f"SELECT timestamp, value FROM v WHERE {one} AND timestamp >= '2015-01-01 00:00:00+00' "
             "AND timestamp < '2016-01-01 00:00:00+00' ORDER BY timestamp"),
            ("prunes", "a month, every station's maximum",
             "SELECT station, max(value) AS m FROM values WHERE parameter = 'water-level-15min' "
             "AND timestamp >= '2020-06-01T00:00:00Z' AND timestamp < '2020-07-01T00:00:00Z' GROUP BY station",
             "SELECT station, max(value) FROM v WHERE parameter = 'water-level-15min' "
             "AND timestamp >= '2020-06-01 00:00:00+00' AND timestamp < '2020-07-01 00:00:00+00' GROUP BY station"),
            ("prunes", "one state's stations (IN list), annual means",
             "SELECT station, date_part('year', timestamp) AS y, avg(value) AS m FROM values "
             f"WHERE station IN ({', '.join(repr(x['id']) for x in stations if x['state'] == state)}) "
             "AND parameter = 'water-level-15min' GROUP BY 1, 2",
             "SELECT station, year(timestamp), avg(value) FROM v "
             f"WHERE station IN ({', '.join(repr(x['id']) for x in stations if x['state'] == state)}) "
             "AND parameter = 'water-level-15min' GROUP BY 1, 2"),
            ("per station", "count, mean, max of every series",
             "SELECT station, parameter, count(*) AS n, avg(value) AS m, max(value) AS x FROM values "
             "GROUP BY station, parameter",
             "SELECT station, parameter, count(*), avg(value), max(value) FROM v GROUP BY station, parameter"),
            ("join", "annual means per state (join with stations)",
             "SELECT s.state, date_part('year', v.timestamp) AS y, avg(v.value) AS m FROM values v "
             "JOIN stations s ON v.station = s.id WHERE v.parameter = 'water-level-15min' GROUP BY 1, 2",
             "SELECT s.state, year(v.timestamp), avg(v.value) FROM v JOIN s ON v.station = s.id "
             "WHERE v.parameter = 'water-level-15min' GROUP BY 1, 2"),
            ("window", "largest rise in 2023, per station",
             "SELECT station, max(d) AS rise FROM (SELECT station, value - lag(value) OVER "
             "(PARTITION BY station ORDER BY timestamp) AS d FROM values WHERE parameter = 'water-level-15min' "
             "AND timestamp >= '2023-01-01T00:00:00Z') GROUP BY station",
             "SELECT station, max(d) FROM (SELECT station, value - lag(value) OVER "
             "(PARTITION BY station ORDER BY timestamp) AS d FROM v WHERE parameter = 'water-level-15min' "
             "AND timestamp >= '2023-01-01 00:00:00+00') GROUP BY station"),
        ]
        print(f"{len(files)} files; medians of {args.runs} alternating runs (s)")
        print()
        print("| kind | query | /v1/sql | DuckDB | ours/DuckDB | rows |")
        print("|---|---|---:|---:|---:|---:|")
        for kind, name, mine, duck in cases:
            a, b = [], []
            for _ in range(args.runs):
                ta, ra = ours(h.base, mine)
                tb, rb = theirs(con, duck)
                assert ra == rb, f"{name}: {ra} rows, DuckDB {rb}"
                a.append(ta)
                b.append(tb)
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"| {kind} | {name} | {ma:.3f} | {mb:.3f} | {ma / mb:.2f} | {ra} |", flush=True)
    finally:
        h.stop()


if __name__ == "__main__":
    main()
