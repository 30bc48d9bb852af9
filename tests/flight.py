#!/usr/bin/env python3
"""Arrow Flight SQL as its users meet it: the ADBC driver (`adbc-driver-flightsql`) and
pyarrow.flight speaking to a running server.

    flight.py open GRPC BASE       tables and columns, prepared statements, refused
                                   statements, the version answered from, `as-of`
    flight.py limits GRPC          each guardrail tripped (server run with small limits)
    flight.py access GRPC KEY USER PASSWORD JWT_SECRET
                                   no credentials, an API key, Basic through the handshake,
                                   a bearer JWT, a session token; wrong ones refused

Answers are compared with `/v1/sql`'s over HTTP (tests/sql.py compares both with DuckDB).
Prints one line per mode when every check passed.
"""

import base64
import hashlib
import hmac
import io
import json
import sys
import threading
import time
import urllib.parse
import urllib.request

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pyarrow.flight as flight
import pyarrow.ipc as ipc

CALL_HEADER = adbc_driver_flightsql.DatabaseOptions.RPC_CALL_HEADER_PREFIX.value


def http_sql(base, statement):
    url = f"{base}/sql?format=arrow&q={urllib.parse.quote(statement)}"
    with urllib.request.urlopen(url) as r:
        return ipc.open_stream(io.BytesIO(r.read())).read_all()


def http_version(base):
    with urllib.request.urlopen(f"{base}/sql?q={urllib.parse.quote('SELECT 1 AS one')}") as r:
        return json.load(r)["meta"]["datasetVersion"]


def adbc(url, **db_kwargs):
    return flightsql.connect(url, db_kwargs=db_kwargs)


def query(conn, statement):
    with conn.cursor() as cur:
        cur.execute(statement)
        return cur.fetch_arrow_table()


def refused(what, call, *needles):
    """Expects `call` to fail with a message holding each of `needles`; returns it."""
    try:
        call()
    except Exception as e:  # the ADBC and pyarrow.flight errors share no base class but this
        text = str(e)
        for needle in needles:
            assert needle.lower() in text.lower(), f"{what}: {needle!r} not in: {text}"
        return text
    raise AssertionError(f"{what}: not refused")


# Flight SQL commands for pyarrow.flight, which knows Flight but not Flight SQL's messages:
# protobuf by hand (length-delimited fields), inside a google.protobuf.Any.
def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, data):
    return bytes([number << 3 | 2]) + varint(len(data)) + data


def statement_command(statement):
    command = field(1, statement.encode())
    return field(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery") + field(2, command)


def raw_query(client, statement, options=None):
    """The FlightInfo and rows of `statement` through pyarrow.flight."""
    options = options or flight.FlightCallOptions()
    info = client.get_flight_info(flight.FlightDescriptor.for_command(statement_command(statement)), options)
    assert len(info.endpoints) == 1, info
    return info, client.do_get(info.endpoints[0].ticket, options).read_all()


def check_open(url, base):
    conn = adbc(url)
    # The tables and their columns, as a client browsing the server finds them.
    objects = conn.adbc_get_objects(depth="columns").read_all().to_pylist()
    assert [c["catalog_name"] for c in objects] == ["hydro"], objects
    schemas = objects[0]["catalog_db_schemas"]
    assert [s["db_schema_name"] for s in schemas] == ["public"], schemas
    tables = {t["table_name"]: [c["column_name"] for c in t["table_columns"]] for t in schemas[0]["db_schema_tables"]}
    assert set(tables) == {"values", "daily", "stations", "parameters", "characteristics"}, tables
    assert tables["values"] == ["parameter", "timestamp", "value", "quality", "station"], tables["values"]
    values_schema = conn.adbc_get_table_schema("values")
    assert values_schema.field("value").type == "double", values_schema
    assert conn.adbc_get_table_types() == ["TABLE"]
    info = conn.adbc_get_info()
    assert info["vendor_name"] == "Hydro API", info

    # A statement's answer equals /v1/sql's, through a plain and a prepared statement.
    statement = ("SELECT s.state, count(*) AS n, max(v.value) AS top FROM values v "
                 "JOIN stations s ON v.station = s.id GROUP BY s.state ORDER BY s.state")
    want = http_sql(base, statement)
    assert query(conn, statement).equals(want)
    with conn.cursor() as cur:
        cur.adbc_prepare(statement)
        cur.execute(statement)
        assert cur.fetch_arrow_table().equals(want)

    # What is not one reading statement is refused, saying why.
    for bad, needle in [
        ("DROP TABLE values", "only SELECT"),
        ("INSERT INTO stations VALUES (1)", "only SELECT"),
        ("COPY (SELECT 1) TO '/tmp/x.csv'", "only SELECT"),
        ("SET datafusion.execution.batch_size = 1", "only SELECT"),
        ("CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/passwd'", "only SELECT"),
        ("SELECT 1; SELECT 2", "one statement at a time"),
        ("SELECT nothing FROM nowhere", "nowhere"),
    ]:
        refused(bad, lambda: query(conn, bad), needle, "invalid")
    conn.close()

    # pyarrow.flight: the FlightInfo names the version its rows come from, as /v1/sql's
    # Link does, and `as-of` picks one.
    client = flight.connect(url)
    info, rows = raw_query(client, "SELECT count(*) AS n FROM stations")
    assert info.app_metadata.decode() == http_version(base), info.app_metadata
    assert rows.column("n").to_pylist() == [24], rows
    info, _ = raw_query(client, "SELECT 1 AS one",
                        flight.FlightCallOptions(headers=[(b"as-of", b"1")]))
    assert info.app_metadata.decode().startswith("1-"), info.app_metadata
    refused("as-of 99", lambda: raw_query(client, "SELECT 1", flight.FlightCallOptions(headers=[(b"as-of", b"99")])),
            "no version 99")
    refused("as-of yesterday", lambda: raw_query(client, "SELECT 1", flight.FlightCallOptions(headers=[(b"as-of", b"yesterday")])),
            "asOf")
    refused("a forged ticket", lambda: client.do_get(flight.Ticket(b"not ours")).read_all())
    # Writes are not taken, whatever the door.
    writer = lambda: client.do_put(flight.FlightDescriptor.for_command(b"x"), rows.schema)
    refused("do_put", lambda: writer()[0].close())
    print("flight open: tables, statements, refusals and versions as /v1/sql")


def check_limits(url):
    conn = adbc(url)
    refused("rows", lambda: query(conn, "SELECT * FROM values LIMIT 1000"), "100 rows", "resource")
    refused("memory", lambda: query(conn, "SELECT * FROM values ORDER BY value DESC"), "memory")
    # A query that outlives its time holds the one slot meanwhile.
    slow = {}

    def run_slow():
        client = flight.connect(url)
        try:
            raw_query(client, "SELECT count(*) FROM generate_series(1, 100000000000)")
            slow["error"] = None
        except Exception as e:
            slow["error"] = str(e)

    thread = threading.Thread(target=run_slow)
    thread.start()
    time.sleep(0.5)
    refused("a second query", lambda: query(conn, "SELECT 1"), "queries are running", "resource")
    thread.join()
    assert slow["error"] is not None and "2 s" in slow["error"] and "deadline" in slow["error"].lower(), slow
    assert query(conn, "SELECT 1 AS one").column("one").to_pylist() == [1]
    conn.close()
    print("flight limits: rows, memory, time and slots trip as on /v1/sql")


def jwt(secret, claims):
    def part(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=")
    head = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = part(json.dumps(claims).encode())
    signature = part(hmac.new(secret.encode(), head + b"." + body, hashlib.sha256).digest())
    return (head + b"." + body + b"." + signature).decode()


def check_access(url, key, user, password, secret):
    statement = "SELECT count(*) AS n FROM stations"
    refused("no credentials", lambda: query(adbc(url), statement), "credentials are required", "unauthenticated")
    refused("a wrong key", lambda: query(adbc(url, **{CALL_HEADER + "x-api-key": "nope"}), statement),
            "API key is not valid")
    refused("a wrong password", lambda: query(adbc(url, username=user, password="wrong"), statement),
            "not valid")
    forged = jwt("not the secret", {"exp": int(time.time()) + 600})
    refused("a forged token", lambda: query(adbc(url, **{
        adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {forged}"}), statement),
        "bearer token is not valid")
    token = jwt(secret, {"exp": int(time.time()) + 600})
    for how, kwargs in [
        ("API key", {CALL_HEADER + "x-api-key": key}),
        ("Basic through the handshake", {"username": user, "password": password}),
        ("bearer JWT", {adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {token}"}),
    ]:
        conn = adbc(url, **kwargs)
        got = query(conn, statement).column("n").to_pylist()
        assert got == [24], f"{how}: {got}"
        assert conn.adbc_get_table_schema("stations").field("id") is not None, how
        conn.close()
    # The handshake's session token serves the calls after it, and only its own.
    client = flight.connect(url)
    name, value = client.authenticate_basic_token(user, password)
    assert name.lower() == b"authorization" and value.startswith(b"Bearer "), (name, value)
    _, rows = raw_query(client, statement, flight.FlightCallOptions(headers=[(name, value)]))
    assert rows.column("n").to_pylist() == [24]
    refused("a session token of no session",
            lambda: raw_query(client, statement, flight.FlightCallOptions(headers=[(b"authorization", value[:-4] + b"AAAA")])),
            "not valid")
    refused("the handshake without credentials", lambda: flight.connect(url).authenticate_basic_token(user, "wrong"),
            "not valid")
    print("flight access: API key, Basic, bearer and session tokens let in; the rest refused")


def main():
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "open":
        check_open(url, sys.argv[3])
    elif mode == "limits":
        check_limits(url)
    elif mode == "access":
        check_access(url, *sys.argv[3:7])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
