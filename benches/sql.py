#!/usr/bin/env python3
"""SQL over the archive: `/v1/sql` and Arrow Flight SQL against DuckDB over the same files,
side by side in one run.

On the 300-station x 20-year archive (15-minute values, `append.py`'s), each query below is
asked of `/v1/sql` (an Arrow IPC answer, read whole by the client), of Flight SQL through the
ADBC driver (`fetch_arrow_table`), and run by DuckDB in process (threads = 2, the machine's
cores) over the current version's value files as `docs/on-disk-layout.md` reads them (Hive
partitioning, `station` as text), with the stations table loaded from the API's Parquet list.
Then a 10-year series (one station's 15-minute water levels, ~350 000 rows) as the values
endpoint's Arrow answer (made anew, and sent again from the answer store) and as a Flight SQL
statement, through the ADBC driver and through pyarrow.flight (`GetFlightInfo`, then `DoGet`). Runs alternate; medians. Rows are
compared (count).
Targets: the queries that prune (one station, a time range, a state) and the
per-station aggregates no slower than DuckDB; whole-archive joins and window functions within
2x; the 10-year series through Flight SQL no slower than the HTTP Arrow answer.
Usage:

    python3 benches/sql.py [--no-build] [--runs N] [--series-only]
"""

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import adbc_driver_flightsql.dbapi as flightsql
import duckdb
import pyarrow.flight
import pyarrow.ipc as ipc
import harness

# Flight SQL's statement command for pyarrow.flight, as the Flight SQL test builds it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from flight import raw_query  # noqa: E402


def ours(base, statement):
    url = f"{base}/sql?format=arrow&q={urllib.parse.quote(statement)}"
    t = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        table = ipc.open_stream(io.BytesIO(r.read())).read_all()
    return time.perf_counter() - t, table.num_rows


def arrow_get(url, fresh):
    """An Arrow answer read whole; `fresh`: made anew (`Cache-Control: no-cache`), not sent
    from the answer store."""
    request = urllib.request.Request(url, headers={"Cache-Control": "no-cache"} if fresh else {})
    t = time.perf_counter()
    with urllib.request.urlopen(request) as r:
        table = ipc.open_stream(io.BytesIO(r.read())).read_all()
    return time.perf_counter() - t, table.num_rows


def flight(conn, statement):
    t = time.perf_counter()
    with conn.cursor() as cur:
        cur.execute(statement)
        rows = cur.fetch_arrow_table().num_rows
    return time.perf_counter() - t, rows


def pyflight(client, statement):
    t = time.perf_counter()
    _, table = raw_query(client, statement)
    return time.perf_counter() - t, table.num_rows


def theirs(con, statement):
    t = time.perf_counter()
    rows = con.sql(statement).to_arrow_table().num_rows
    return time.perf_counter() - t, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--series-only", action="store_true", help="only the 10-year series (no DuckDB)")
    args = ap.parse_args()
    harness.build_release(args.no_build)
    data = harness.generate("append-300x20", 300, 20, start="2004-01-01")
    os.environ["HYDRO_SQL_TIMEOUT_SECS"] = "600"
    flight_port = harness.free_port()
    os.environ["HYDRO_FLIGHT_BIND"] = f"127.0.0.1:{flight_port}"
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
        fl = flightsql.connect(f"grpc://127.0.0.1:{flight_port}")
        print(f"{len(files)} files; medians of {args.runs} alternating runs (s)")
        print()
        print("| kind | query | /v1/sql | Flight SQL | DuckDB | /v1/sql / DuckDB | Flight / DuckDB | rows |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for kind, name, mine, duck in [] if args.series_only else cases:
            a, f, b = [], [], []
            for _ in range(args.runs):
                ta, ra = ours(h.base, mine)
                tf, rf = flight(fl, mine)
                tb, rb = theirs(con, duck)
                assert ra == rb == rf, f"{name}: {ra} rows, Flight {rf}, DuckDB {rb}"
                a.append(ta)
                f.append(tf)
                b.append(tb)
            ma, mf, mb = statistics.median(a), statistics.median(f), statistics.median(b)
            print(f"| {kind} | {name} | {ma:.3f} | {mf:.3f} | {mb:.3f} | {ma / mb:.2f} | {mf / mb:.2f} | {ra} |",
                  flush=True)
        print()
        window = "from=2010-01-01T00:00:00Z&to=2019-12-31T23:59:59Z"
        http = f"{h.base}/stations/{station}/parameters/water-level-15min/values?{window}&format=arrow"
        statement = (f"SELECT timestamp, value, quality FROM values WHERE {one} "
                     "AND timestamp >= '2010-01-01T00:00:00Z' AND timestamp < '2020-01-01T00:00:00Z' "
                     "ORDER BY timestamp")
        client = pyarrow.flight.FlightClient(f"grpc://127.0.0.1:{flight_port}")
        a, c, f, p = [], [], [], []
        for _ in range(max(args.runs, 5)):
            ta, ra = arrow_get(http, fresh=True)
            tc, _ = arrow_get(http, fresh=False)
            tf, rf = flight(fl, statement)
            tp, rp = pyflight(client, statement)
            assert ra == rf == rp, f"10-year series: HTTP {ra} rows, Flight {rf} and {rp}"
            a.append(ta)
            c.append(tc)
            f.append(tf)
            p.append(tp)
        ma, mc, mf, mp = (statistics.median(x) for x in (a, c, f, p))
        print("| 10-year series | HTTP Arrow, made | HTTP Arrow, answer store | Flight SQL (ADBC) "
              "| Flight SQL (pyarrow.flight) | ADBC / HTTP made | pyarrow.flight / HTTP made | rows |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| {station} water-level-15min | {ma:.3f} | {mc:.3f} | {mf:.3f} | {mp:.3f} | {mf / ma:.2f} "
              f"| {mp / ma:.2f} | {ra} |", flush=True)
        fl.close()
    finally:
        h.stop()


if __name__ == "__main__":
    main()
