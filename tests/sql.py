#!/usr/bin/env python3
"""`/v1/sql` against DuckDB over the same files: each query of a set (filters, a year of one
series, group by station and year, joins with stations, window functions) is asked of the
API as Arrow IPC, and its DuckDB twin run over the current version's files (the recipe of
`docs/on-disk-layout.md`); the rows must agree (floats to 1e-9). Given Flight SQL's address,
each query is asked there too, through the ADBC driver, and must agree as well.

    sql.py BASE ROOT [grpc://HOST:PORT]
"""

import io
import json
import math
import sys
import urllib.parse
import urllib.request

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc


def get(url):
    with urllib.request.urlopen(url) as r:
        return r.read()


def ask(base, statement):
    body = get(f"{base}/sql?format=arrow&q={urllib.parse.quote(statement)}")
    return ipc.open_stream(io.BytesIO(body)).read_all()


def flight_asker(url):
    """Asks statements of Flight SQL at `url` through the ADBC driver."""
    import adbc_driver_flightsql.dbapi as flightsql

    conn = flightsql.connect(url)

    def ask_flight(statement):
        with conn.cursor() as cur:
            cur.execute(statement)
            return cur.fetch_arrow_table()
    return ask_flight


def rows_of(table):
    out = []
    for row in table.to_pylist():
        out.append(tuple(v.isoformat() if hasattr(v, "isoformat") else v for v in row.values()))
    return out


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def main():
    base, root = sys.argv[1], sys.argv[2].rstrip("/")
    askers = [("/v1/sql", lambda statement: ask(base, statement))]
    if len(sys.argv) > 3:
        askers.append(("Flight SQL", flight_asker(sys.argv[3])))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    manifest = json.load(open(f"{root}/manifest.json"))
    files = con.execute(f"SELECT list(DISTINCT '{root}/' || path) FROM '{root}/{manifest['catalog']['files']}'").fetchone()[0]
    listed = ", ".join(f"'{f}'" for f in files)
    con.execute(f"CREATE VIEW v AS SELECT * FROM read_parquet([{listed}], hive_partitioning = true, "
                "hive_types = {'station': VARCHAR})")
    rollups = con.execute(f"SELECT list('{root}/' || path) "
                          f"FROM '{root}/{manifest['catalog']['rollups']}'").fetchone()[0]
    listed = ", ".join(f"'{f}'" for f in rollups)
    con.execute(f"CREATE VIEW d AS SELECT * FROM read_parquet([{listed}], hive_partitioning = true, "
                "hive_types = {'station': VARCHAR})")
    stations = json.loads(get(f"{base}/stations?limit=10000&fields=id,state"))["data"]
    con.execute("CREATE TABLE s (id VARCHAR, state VARCHAR)")
    con.executemany("INSERT INTO s VALUES (?, ?)", [(x["id"], x.get("state")) for x in stations])
    first = min(x["id"] for x in stations)
    param = con.execute("SELECT min(parameter) FROM v WHERE station = $1", [first]).fetchone()[0]
    one = f"station = '{first}' AND parameter = '{param}'"
    queries = [
        # (ours, DuckDB's)
        ("SELECT count(*) AS n, sum(value) AS total FROM values",
         "SELECT count(*), sum(value) FROM v"),
        (f"SELECT timestamp, value, quality FROM values WHERE {one} AND timestamp >= '2023-06-01T00:00:00Z' "
         "AND timestamp < '2023-07-01T00:00:00Z' ORDER BY timestamp",
         f"SELECT timestamp, value, quality FROM v WHERE {one} AND timestamp >= '2023-06-01 00:00:00+00' "
         "AND timestamp < '2023-07-01 00:00:00+00' ORDER BY timestamp"),
        ("SELECT station, parameter, date_part('year', timestamp) AS year, max(value) AS annual_max "
         "FROM values GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
         "SELECT station, parameter, year(timestamp), max(value) FROM v GROUP BY ALL ORDER BY ALL"),
        ("SELECT s.state, count(*) AS n FROM values v JOIN stations s ON v.station = s.id "
         "GROUP BY s.state ORDER BY s.state",
         "SELECT s.state, count(*) FROM v JOIN s ON v.station = s.id GROUP BY ALL ORDER BY ALL"),
        ("SELECT station, count(*) AS n FROM values WHERE value > 300 AND quality = 'good' "
         "GROUP BY station ORDER BY station",
         "SELECT station, count(*) FROM v WHERE value > 300 AND quality = 'good' GROUP BY ALL ORDER BY ALL"),
        (f"SELECT timestamp, value - lag(value) OVER (ORDER BY timestamp) AS change FROM values "
         f"WHERE {one} ORDER BY timestamp LIMIT 500",
         f"SELECT timestamp, value - lag(value) OVER (ORDER BY timestamp) FROM v WHERE {one} "
         "ORDER BY timestamp LIMIT 500"),
        ("SELECT station, parameter, avg(value) AS mean, rank() OVER (PARTITION BY parameter ORDER BY avg(value) DESC, station) AS r "
         "FROM values GROUP BY station, parameter ORDER BY parameter, r",
         "SELECT station, parameter, avg(value), rank() OVER (PARTITION BY parameter ORDER BY avg(value) DESC, station) AS r "
         "FROM v GROUP BY station, parameter ORDER BY parameter, r"),
        ("WITH daily AS (SELECT station, date_trunc('day', timestamp) AS day, avg(value) AS mean FROM values "
         f"WHERE {one} GROUP BY 1, 2) SELECT count(*) AS days, max(mean) AS top FROM daily",
         "WITH daily AS (SELECT station, date_trunc('day', timestamp) AS day, avg(value) AS mean FROM v "
         f"WHERE {one} GROUP BY 1, 2) SELECT count(*), max(mean) FROM daily"),
        # One series read as the values endpoint reads it: filters on values and quality above
        # it, exclusive and inclusive time bounds, time order without a sort.
        (f"SELECT count(*) AS n, sum(value) AS total FROM values WHERE {one} AND value > 300 AND quality = 'good'",
         f"SELECT count(*), sum(value) FROM v WHERE {one} AND value > 300 AND quality = 'good'"),
        (f"SELECT * FROM values WHERE {one} AND timestamp > '2023-06-01T00:00:00Z' "
         "AND timestamp <= '2023-06-02T00:00:00Z' ORDER BY timestamp DESC",
         f"SELECT * FROM v WHERE {one} AND timestamp > '2023-06-01 00:00:00+00' "
         "AND timestamp <= '2023-06-02 00:00:00+00' ORDER BY timestamp DESC"),
        (f"SELECT timestamp, value FROM values WHERE {one} AND timestamp BETWEEN '2023-06-01T00:00:00Z' "
         "AND '2023-06-01T06:00:00Z' OR timestamp = '2023-06-03T12:00:00Z' AND station = '" + first + "' "
         f"AND parameter = '{param}' ORDER BY timestamp",
         f"SELECT timestamp, value FROM v WHERE {one} AND timestamp BETWEEN '2023-06-01 00:00:00+00' "
         "AND '2023-06-01 06:00:00+00' OR timestamp = '2023-06-03 12:00:00+00' AND station = '" + first + "' "
         f"AND parameter = '{param}' ORDER BY timestamp"),
        (f"SELECT timestamp, value FROM values WHERE {one} AND timestamp = '2023-06-03T12:00:00Z'",
         f"SELECT timestamp, value FROM v WHERE {one} AND timestamp = '2023-06-03 12:00:00+00'"),
        # Bounds that allow no time: no rows (a count of 0), not an error.
        (f"SELECT count(*) AS n FROM values WHERE {one} AND timestamp >= '2023-07-01T00:00:00Z' "
         "AND timestamp < '2023-06-01T00:00:00Z'",
         f"SELECT count(*) FROM v WHERE {one} AND timestamp >= '2023-07-01 00:00:00+00' "
         "AND timestamp < '2023-06-01 00:00:00+00'"),
        # A bound on the time cast to whole days: no bound the scan can read exactly.
        (f"SELECT count(*) AS n FROM values WHERE {one} AND CAST(timestamp AS DATE) = DATE '2023-06-03'",
         f"SELECT count(*) FROM v WHERE {one} AND CAST(timestamp AS DATE) = DATE '2023-06-03'"),
        # The rollups: as their files say, and as the values they sum.
        (f"SELECT parameter, day, count, sum, mean, min, min_time, max, max_time, first, first_time, last, last_time "
         f"FROM daily WHERE station = '{first}' AND day >= '2023-03-01T00:00:00Z' ORDER BY parameter, day",
         f"SELECT parameter, day, count, sum, sum / count, min, minTime, max, maxTime, first, firstTime, last, lastTime "
         f"FROM d WHERE station = '{first}' AND day >= '2023-03-01 00:00:00+00' ORDER BY parameter, day"),
        ("SELECT station, parameter, date_part('year', day) AS year, max(max) AS annual_max, sum(count) AS n "
         "FROM daily GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
         "SELECT station, parameter, year(timestamp), max(value), count(*) FROM v GROUP BY ALL ORDER BY ALL"),
    ]
    for ours, theirs in queries:
        want = [tuple(v.isoformat() if hasattr(v, "isoformat") else v for v in r)
                for r in con.execute(theirs).fetchall()]
        for door, asker in askers:
            got = rows_of(asker(ours))
            assert len(got) == len(want), f"{door}: {ours}: {len(got)} rows, DuckDB {len(want)}"
            assert len(got) > 0, f"{ours}: no rows, a query that tests nothing"
            for i, (g, w) in enumerate(zip(got, want)):
                assert len(g) == len(w) and all(same(a, b) for a, b in zip(g, w)), \
                    f"{door}: {ours}: row {i}: {g} != DuckDB {w}"
    doors = " and ".join(door for door, _ in askers)
    print(f"sql: {len(queries)} queries through {doors} agree with DuckDB")


if __name__ == "__main__":
    main()
