#!/usr/bin/env python3
"""Independent readers against our files and responses (run by tests/readers.rs).

usage: readers.py BASE_URL DATASET_DIR

- the dataset layout read back with pyarrow and DuckDB: partition paths, column types, sort
  order, statistics, page index, compression, row counts;
- every download format read with a real reader (pandas CSV, pyarrow IPC and Parquet, GDAL
  through pyogrio for GeoJSON) and compared row by row with the JSON answer;
- Parquet read over HTTP as readers of remote files do (fsspec, under pandas and pyarrow:
  `HEAD` for the length, then byte ranges; polars), and the catalog as a table joined with the
  values in DuckDB.
"""
import io
import json
import os
import struct
import sys
import tempfile
import urllib.request

import duckdb
import fsspec
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pyogrio.raw

BASE, ROOT = sys.argv[1], sys.argv[2]


def fetch(path):
    with urllib.request.urlopen(BASE + path) as r:
        return r.read(), r.headers


def value_files(manifest):
    """The value files the files table lists: one row per file and parameter, a file's rows
    together; `path` names the file (this dataset is not compacted: a file a month)."""
    table = pq.read_table(os.path.join(ROOT, manifest["catalog"]["files"])).to_pylist()
    files = []
    for row in table:
        key = (row["station"], row["month"], row["generation"])
        if not files or files[-1]["key"] != key:
            files.append({"key": key, "station": row["station"], "month": row["month"],
                          "size": row["size"], "series": [],
                          "path": row["path"]})
            assert row["path"] == f"values/station={row['station']}/{row['month']}-g{row['generation']}.parquet", row
        files[-1]["series"].append({"parameter": row["parameter"], "rows": row["rows"]})
    return files


def check_layout():
    manifest = json.load(open(os.path.join(ROOT, "manifest.json")))
    files = value_files(manifest)
    assert len(files) == manifest["counts"]["files"]
    on_disk = set()
    for root, _, names in os.walk(os.path.join(ROOT, "values")):
        on_disk.update(os.path.relpath(os.path.join(root, n), ROOT) for n in names)
    assert on_disk == {f["path"] for f in files}, "the files table lists exactly the value files"
    total = 0
    for f in files:
        path = os.path.join(ROOT, f["path"])
        assert os.path.getsize(path) == f["size"], f
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        assert pa.types.is_dictionary(schema.field("parameter").type), schema
        assert schema.field("timestamp").type == pa.timestamp("us", tz="UTC"), schema
        assert schema.field("value").type == pa.float64(), schema
        assert pa.types.is_dictionary(schema.field("quality").type), schema
        md = pf.metadata
        assert md.num_row_groups == len(f["series"]), "one row group per parameter"
        for rg in range(md.num_row_groups):
            for c in range(md.num_columns):
                col = md.row_group(rg).column(c)
                assert col.compression == "LZ4", col  # pyarrow names LZ4_RAW "LZ4"
                if col.path_in_schema == "timestamp":
                    assert "DELTA_BINARY_PACKED" in col.encodings, col
                assert col.is_stats_set, col
                assert col.has_offset_index and col.has_column_index, "page index written"
        table = pf.read()
        keys = list(zip(table.column("parameter").to_pylist(), table.column("timestamp").cast(pa.int64()).to_pylist()))
        assert keys == sorted(keys), f"{path} not sorted by (parameter, timestamp)"
        months = {t.strftime("%Y-%m") for t in table.column("timestamp").to_pylist()}
        assert months == {f["month"]}, (months, f["month"])
        assert table.num_rows == sum(s["rows"] for s in f["series"])
        total += table.num_rows
    assert total == manifest["counts"]["values"]
    con = duckdb.connect()
    n, stations = con.execute(
        "select count(*), count(distinct station) from read_parquet(?, hive_partitioning = true)",
        [os.path.join(ROOT, "values/*/*.parquet")],
    ).fetchone()
    assert n == total, (n, total)
    assert stations == len({f["station"] for f in files})
    check_newest(con, manifest)
    print(f"layout: {len(files)} files, {total} rows checked")


def check_newest(con, manifest):
    """The newest months' table holds the files table's rows of each series' newest month with
    rows, each file once (DuckDB as the oracle)."""
    files = os.path.join(ROOT, manifest["catalog"]["files"])
    newest = os.path.join(ROOT, manifest["catalog"]["newest"])
    expected = con.execute(
        """with newest as (
             select station, parameter, max(month) as month from read_parquet(?)
             where rows > 0 group by all)
           select * from read_parquet(?) where (station, month) in
             (select (station, month) from newest)
           order by station, month, parameter""",
        [files, files],
    ).fetchall()
    got = con.execute("select * from read_parquet(?) order by station, month, parameter",
                      [newest]).fetchall()
    assert got == expected, (got[:3], expected[:3])
    assert len({(r[0], r[1]) for r in got}) >= len({r[0] for r in got}) > 0


def check_binary(series, rows, row_groups=None):
    """Arrow IPC and Parquet answers agree with JSON row by row (pyarrow); Parquet also through
    DuckDB, with page statistics and page index on every column chunk."""
    sep = "&" if "?" in series else "?"
    expected_ts = pd.to_datetime([r["timestamp"] for r in rows], utc=True)
    for fmt in ["arrow", "parquet"]:
        body, _ = fetch(series + f"{sep}format={fmt}")
        table = ipc.open_stream(body).read_all() if fmt == "arrow" else pq.read_table(io.BytesIO(body))
        assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC"), table.schema
        got = table.to_pandas()
        assert len(got) == len(rows), (fmt, series, len(got), len(rows))
        assert (pd.DatetimeIndex(got["timestamp"]) == expected_ts).all(), fmt
        assert got["value"].tolist() == [r["value"] for r in rows], fmt
        assert got["quality"].astype(str).tolist() == [r["quality"] for r in rows], fmt
        if fmt != "parquet":
            continue
        md = pq.ParquetFile(io.BytesIO(body)).metadata
        assert md.num_rows == len(rows)
        if row_groups is not None:
            assert md.num_row_groups == row_groups, (md.num_row_groups, series)
        for rg in range(md.num_row_groups):
            for c in range(md.num_columns):
                col = md.row_group(rg).column(c)
                assert col.is_stats_set, (series, rg, c)
                assert col.has_offset_index and col.has_column_index, (series, rg, c)
        with tempfile.NamedTemporaryFile(suffix=".parquet") as tmp:
            tmp.write(body)
            tmp.flush()
            n, first, last = duckdb.connect().execute(
                "select count(*), epoch_us(min(timestamp)), epoch_us(max(timestamp)) from read_parquet(?)", [tmp.name]
            ).fetchone()
        assert n == len(rows), (n, len(rows))
        assert (first, last) == (expected_ts[0].value // 1000, expected_ts[-1].value // 1000), (first, last)


def check_formats():
    stations = json.loads(fetch("/stations")[0])["data"]
    sid = stations[0]["id"]
    series = f"/stations/{sid}/parameters/discharge-15min/values?from=2023-06-01T00:00:00Z&to=2023-06-20T00:00:00Z"
    rows = json.loads(fetch(series)[0])["data"]
    assert len(rows) > 1000

    body, headers = fetch(series + "&format=csv")
    assert headers["Content-Type"] == "text/csv; charset=utf-8"
    df = pd.read_csv(io.BytesIO(body), dtype={"timestamp": str, "quality": str})
    assert list(df.columns) == ["timestamp", "value", "quality"]
    assert df["timestamp"].tolist() == [r["timestamp"] for r in rows]
    assert df["value"].tolist() == [r["value"] for r in rows]
    assert df["quality"].tolist() == [r["quality"] for r in rows]

    check_binary(series, rows)
    # Months wholly inside the window come as stored row groups, copied as they are on disk;
    # the cut months at both ends are encoded. Both kinds must read back as one table.
    spanning = f"/stations/{sid}/parameters/discharge-15min/values?from=2023-02-15T06:00:00Z&to=2023-06-10T00:00:00Z"
    check_binary(spanning, json.loads(fetch(spanning)[0])["data"], row_groups=5)
    whole = f"/stations/{sid}/parameters/water-level-15min/values"
    check_binary(whole, json.loads(fetch(whole + "?limit=10000000")[0])["data"])

    body, _ = fetch("/stations?format=geojson")
    with tempfile.NamedTemporaryFile(suffix=".geojson") as tmp:
        tmp.write(body)
        tmp.flush()
        meta, _, geometry, fields = pyogrio.raw.read(tmp.name)
    names = dict(zip(meta["fields"], fields))
    assert list(names["name"]) == [s["name"] for s in stations]
    for wkb, s in zip(geometry, stations):
        # WKB point: byte order, type, x (lon), y (lat)
        order = "<" if wkb[0] == 1 else ">"
        lon, lat = struct.unpack(order + "dd", bytes(wkb[5:21]))
        assert (lon, lat) == (s["coordinates"]["lon"], s["coordinates"]["lat"]), (lon, lat, s)
    print(f"formats: csv, arrow, parquet ({len(rows)} rows) and geojson ({len(stations)} features) agree with JSON")


def check_http_readers():
    stations = json.loads(fetch("/stations")[0])["data"]
    sid = stations[0]["id"]
    path = f"/stations/{sid}/parameters/discharge-15min/values?from=2023-03-01T00:00:00Z&format=parquet"
    want = json.loads(fetch(path.replace("&format=parquet", "&limit=10000000"))[0])["data"]
    url = BASE + path
    assert len(pd.read_parquet(url)) == len(want), "pandas over fsspec"
    with fsspec.open(url, block_size=4096) as f:
        f.seek(-4, 2)
        assert f.read() == b"PAR1", "a ranged read of the footer's magic"
        table = pq.read_table(f)
    assert table.column("value").to_pylist() == [r["value"] for r in want], "pyarrow over fsspec"
    assert pl.read_parquet(url).height == len(want), "polars"
    # The catalog as a table, joined with the values, as a researcher would.
    with tempfile.TemporaryDirectory() as d:
        for name, p in [("stations", "/stations?format=parquet"), ("values", path)]:
            with open(os.path.join(d, name + ".parquet"), "wb") as out:
                out.write(fetch(p)[0])
        joined = duckdb.sql(
            f"SELECT s.name, count(*) AS n FROM '{d}/values.parquet' v, '{d}/stations.parquet' s "
            f"WHERE s.id = '{sid}' GROUP BY s.name").fetchall()
    assert joined == [(stations[0]["name"], len(want))], joined
    print(f"http readers: pandas and pyarrow over fsspec ranges, polars, DuckDB join ({len(want)} rows)")


def check_many_series():
    """`/v1/values` (many series) and `/v1/latest` in their table formats, read by pyarrow,
    polars and pandas, against their JSON answers."""
    path = "/values?types=surfaceWater&parameters=water-level-15min,discharge-15min&from=2023-06-01T00:00:00Z&to=2023-06-03T00:00:00Z"
    want = json.loads(fetch(path)[0])["data"]
    assert want, "rows"
    key = lambda r: (r["stationId"], r["parameterId"], r["value"])
    want_keys = [key(r) for r in want]
    parquet = fetch(path + "&format=parquet")[0]
    table = pq.read_table(pa.BufferReader(parquet))
    assert [key(r) for r in table.to_pylist()] == want_keys, "pyarrow Parquet"
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    arrow = ipc.open_stream(fetch(path + "&format=arrow")[0]).read_all()
    assert [key(r) for r in arrow.to_pylist()] == want_keys, "pyarrow IPC"
    assert pl.read_parquet(io.BytesIO(parquet)).height == len(want), "polars"
    # Months wholly inside the window are stored row groups copied beside id chunks made for
    # them: every reader sees one table.
    whole = "/values?types=surfaceWater&parameters=water-level-15min&from=2023-04-20T00:00:00Z&to=2023-07-10T00:00:00Z"
    rows = json.loads(fetch(whole)[0])["data"]
    joined = fetch(whole + "&format=parquet")[0]
    assert pq.ParquetFile(pa.BufferReader(joined)).metadata.num_row_groups > 2, "stored months"
    assert [key(r) for r in pq.read_table(pa.BufferReader(joined)).to_pylist()] == [key(r) for r in rows], "pyarrow joined"
    assert pl.read_parquet(io.BytesIO(joined)).get_column("stationId").to_list() == [r["stationId"] for r in rows], "polars joined"
    with tempfile.NamedTemporaryFile(suffix=".parquet") as f:
        f.write(joined)
        f.flush()
        got = duckdb.sql(f"SELECT stationId, parameterId, value FROM '{f.name}'").fetchall()
    assert [tuple(r) for r in got] == [key(r) for r in rows], "duckdb joined"
    frame = pd.read_csv(io.BytesIO(fetch(path + "&format=csv")[0]))
    assert list(frame.columns) == ["stationId", "parameterId", "timestamp", "value", "quality"]
    assert len(frame) == len(want), "pandas CSV"
    latest = json.loads(fetch("/latest?parameters=water-level-15min")[0])["data"]
    table = pq.read_table(pa.BufferReader(fetch("/latest?parameters=water-level-15min&format=parquet")[0]))
    assert table.column("stationId").to_pylist() == [r["stationId"] for r in latest], "latest Parquet"
    print(f"many series: pyarrow Parquet and IPC, polars, pandas CSV ({len(want)} rows); latest ({len(latest)})")


check_layout()
check_formats()
check_http_readers()
check_many_series()
