#!/usr/bin/env python3
"""A mirror synced with `changedSince`, checked in DuckDB (run by tests/versions.rs).

usage: changes.py BASE_URL QUERY BASE_VERSION

QUERY is a values query (`/stations/S/parameters/P/values?…` or `/values?…`, CSV). The answer
as BASE_VERSION gave it (`asOf`), with the rows of `changedSince=BASE_VERSION` upserted into it
(a row of the changes replaces the snapshot's row of the same series and time), must equal the
current answer, row for row; the changes must be fewer rows than the current answer.
"""
import sys
import tempfile
import urllib.request

import duckdb

BASE, QUERY, VERSION = sys.argv[1:4]


def fetch(query, path):
    with urllib.request.urlopen(BASE + query) as r, open(path, "wb") as f:
        f.write(r.read())


with tempfile.TemporaryDirectory() as tmp:
    snapshot, changes, current = (f"{tmp}/{n}.csv" for n in ("snapshot", "changes", "current"))
    fetch(f"{QUERY}&asOf={VERSION}", snapshot)
    fetch(f"{QUERY}&changedSince={VERSION}", changes)
    fetch(QUERY, current)
    db = duckdb.connect()
    for name, path in (("snapshot", snapshot), ("changes", changes), ("current", current)):
        db.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}', all_varchar = true)")
    keys = [c for c in ("stationId", "parameterId", "timestamp")
            if c in [r[0] for r in db.execute("DESCRIBE current").fetchall()]]
    on = " AND ".join(f"s.{k} = c.{k}" for k in keys)
    order = ", ".join(keys)
    synced = db.execute(f"""
        SELECT * FROM (
            SELECT s.* FROM snapshot s WHERE NOT EXISTS (SELECT 1 FROM changes c WHERE {on})
            UNION ALL SELECT * FROM changes)
        ORDER BY {order}""").fetchall()
    want = db.execute(f"SELECT * FROM current ORDER BY {order}").fetchall()
    changed = db.execute("SELECT count(*) FROM changes").fetchone()[0]
    assert synced == want, f"synced {len(synced)} rows, current {len(want)}"
    assert 0 < changed < len(want), (changed, len(want))
    print(f"synced: {len(want)} rows from a snapshot and {changed} changed rows")
