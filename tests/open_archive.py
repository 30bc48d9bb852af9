#!/usr/bin/env python3
"""The archive read in place by the recipes of `docs/on-disk-layout.md` (DuckDB, Polars,
pyarrow), compared with what the API serves: per series the count, sum, min and max of the
values, and a few whole series row by row; and each series' newest value as the parameters
table gives it, against the newest row with a value DuckDB finds. The recipes are taken from
the document itself, so what users copy is what runs here.

    open_archive.py BASE ROOT [--vacuumed]

ROOT is a local directory or `s3://BUCKET/PREFIX` (the `AWS_*` variables reach the bucket;
DuckDB, which reads buckets only through an extension it would download, reads local
directories only). `--vacuumed`: the store holds only the current version, so a plain glob of
`values/` must read exactly it too.
"""

import io
import json
import math
import os
import re
import sys
import urllib.parse
import urllib.request

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "docs", "on-disk-layout.md")


def recipes():
    """The Python blocks of the document's "Reading the archive in place", run: their
    functions."""
    text = open(DOC).read()
    section = text.split("## Reading the archive in place", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 3, f"expected the DuckDB, Polars and pyarrow recipes, found {len(blocks)}"
    names = {}
    for block in blocks:
        exec(compile(block, DOC, "exec"), names)
    return names["duckdb_values"], names["polars_values"], names["pyarrow_values"]


def get(base, path):
    with urllib.request.urlopen(base + path) as r:
        return r.read(), r.headers



def served(base):
    """Every series the API serves: {(station, parameter): Table(timestamp, value, quality)}."""
    stations = json.loads(get(base, "/stations?limit=10000&fields=id")[0])["data"]
    out = {}
    for s in stations:
        sid = s["id"]
        q = urllib.parse.quote(sid, safe="")
        params = json.loads(get(base, f"/stations/{q}/parameters?limit=10000")[0])["data"]
        for p in params:
            url = f"/stations/{q}/parameters/{p['id']}/values"
            total = json.loads(get(base, f"{url}?limit=0")[0])["meta"]["pagination"]["total"]
            table = pq.read_table(io.BytesIO(get(base, f"{url}?format=parquet")[0]))
            assert table.num_rows == total, (sid, p["id"], table.num_rows, total)
            if table.num_rows:
                out[(sid, p["id"])] = table
    return out


def stats_of_served(series):
    def one(t):
        v = t.column("value").to_pylist()
        return (len(v), math.fsum(v), min(v), max(v))

    return {k: one(t) for k, t in series.items()}


AGG = "count(*) AS n, sum(value) AS total, min(value) AS lo, max(value) AS hi"


def compare(what, got, expected):
    assert set(got) == set(expected), (
        f"{what}: series differ: missing {sorted(set(expected) - set(got))[:3]}, "
        f"extra {sorted(set(got) - set(expected))[:3]}")
    for k, (n, total, lo, hi) in expected.items():
        gn, gtotal, glo, ghi = got[k]
        assert (gn, glo, ghi) == (n, lo, hi), f"{what} {k}: {(gn, glo, ghi)} != {(n, lo, hi)}"
        assert math.isclose(gtotal, total, rel_tol=1e-9, abs_tol=1e-6), f"{what} {k}: sum {gtotal} != {total}"


def rows_of(table):
    t = table.sort_by("timestamp")
    times = t.column("timestamp").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_pylist()
    quality = t.column("quality").cast(pa.string()).to_pylist()
    return list(zip(times, t.column("value").to_pylist(), quality))


def check_rows(what, read_series, series):
    """A few whole series row by row: `read_series(station, parameter)` -> Arrow table."""
    keys = sorted(series)
    for k in {keys[0], keys[len(keys) // 2], keys[-1]}:
        got = rows_of(read_series(*k))
        assert got == rows_of(series[k]), f"{what} {k}: rows differ ({len(got)} rows read)"


def by_duckdb(rel_sql, con):
    rows = con.execute(f"SELECT station, parameter, {AGG} FROM ({rel_sql}) GROUP BY ALL").fetchall()
    return {(s, p): (n, t, lo, hi) for s, p, n, t, lo, hi in rows}


def by_polars(lf):
    df = (lf.group_by("station", "parameter")
          .agg(pl.len().alias("n"), pl.col("value").sum().alias("total"),
               pl.col("value").min().alias("lo"), pl.col("value").max().alias("hi"))
          .with_columns(pl.col("parameter").cast(pl.String))
          .collect())
    return {(r["station"], r["parameter"]): (r["n"], r["total"], r["lo"], r["hi"]) for r in df.iter_rows(named=True)}


def by_pyarrow(dataset):
    t = dataset.to_table(columns=["station", "parameter", "value"])
    t = t.set_column(1, "parameter", t.column("parameter").cast(pa.string()))
    g = t.group_by(["station", "parameter"]).aggregate(
        [("value", "count"), ("value", "sum"), ("value", "min"), ("value", "max")])
    return {(r["station"], r["parameter"]): (r["value_count"], r["value_sum"], r["value_min"], r["value_max"])
            for r in g.to_pylist()}


def check_newest(con, rel_sql, root, expected):
    """The parameters table's newest value of each series (`latest_*`) is the newest row with a
    value that DuckDB finds in the current files."""
    found = {(s, p): (t, v, q) for s, p, t, v, q in con.execute(
        f"SELECT station, parameter, max(epoch_us(timestamp)), arg_max(value, timestamp), "
        f"arg_max(quality::VARCHAR, timestamp) FROM ({rel_sql}) WHERE value IS NOT NULL GROUP BY ALL").fetchall()}
    parameters = json.load(open(f"{root}/manifest.json"))["catalog"]["parameters"]
    given = {(s, p): (t, v, q) for s, p, t, v, q in con.execute(
        f"SELECT station_id, id, epoch_us(latest_timestamp), latest_value, latest_quality "
        f"FROM read_parquet('{root}/{parameters}') WHERE latest_timestamp IS NOT NULL").fetchall()}
    assert set(found) == {k for k, (n, *_) in expected.items() if n}, "series with values differ"
    assert given == found, f"newest values: {sorted(set(given.items()) ^ set(found.items()))[:3]}"


def s3_options():
    e = os.environ
    polars = {"aws_endpoint_url": e["AWS_ENDPOINT_URL"], "aws_access_key_id": e["AWS_ACCESS_KEY_ID"],
              "aws_secret_access_key": e["AWS_SECRET_ACCESS_KEY"], "aws_region": e["AWS_REGION"],
              "aws_allow_http": "true"}
    endpoint = urllib.parse.urlparse(e["AWS_ENDPOINT_URL"])
    fs = pafs.S3FileSystem(endpoint_override=endpoint.netloc, scheme=endpoint.scheme,
                           access_key=e["AWS_ACCESS_KEY_ID"], secret_key=e["AWS_SECRET_ACCESS_KEY"],
                           region=e["AWS_REGION"])
    return polars, fs


def main():
    base, root = sys.argv[1], sys.argv[2].rstrip("/")
    vacuumed = "--vacuumed" in sys.argv[3:]
    duckdb_values, polars_values, pyarrow_values = recipes()
    series = served(base)
    assert series, "the API serves no series"
    expected = stats_of_served(series)
    station = pa.schema([("station", pa.string())])
    read = []
    if root.startswith("s3://"):
        options, fs = s3_options()
        lf = polars_values(root, storage_options=options)
        dataset = pyarrow_values(root.removeprefix("s3://"), filesystem=fs)
        glob_lf = lambda: pl.scan_parquet(f"{root}/values/**/*.parquet", hive_partitioning=True,
                                          hive_schema={"station": pl.String}, storage_options=options)
        glob_ds = lambda: ds.dataset(f"{root.removeprefix('s3://')}/values", format="parquet", filesystem=fs,
                                     partitioning=ds.partitioning(station, flavor="hive"))
    else:
        con = duckdb.connect()
        rel = duckdb_values(con, root)
        compare("duckdb", by_duckdb(rel.sql_query(), con), expected)
        check_newest(con, rel.sql_query(), root, expected)
        check_rows("duckdb", lambda s, p: con.sql(
            f"SELECT timestamp, value, quality FROM ({rel.sql_query()}) WHERE station = $1 AND parameter = $2",
            params=[s, p]).to_arrow_table(), series)
        read.append("duckdb")
        if vacuumed:
            glob = (f"SELECT * FROM read_parquet('{root}/values/**/*.parquet', hive_partitioning = true, "
                    "hive_types = {'station': VARCHAR})")
            compare("duckdb glob", by_duckdb(glob, con), expected)
        lf = polars_values(root)
        dataset = pyarrow_values(root)
        glob_lf = lambda: pl.scan_parquet(f"{root}/values/**/*.parquet", hive_partitioning=True,
                                          hive_schema={"station": pl.String})
        glob_ds = lambda: ds.dataset(f"{root}/values", format="parquet",
                                     partitioning=ds.partitioning(station, flavor="hive"))
    compare("polars", by_polars(lf), expected)
    check_rows("polars", lambda s, p: lf.filter((pl.col("station") == s) & (pl.col("parameter") == p))
               .select("timestamp", "value", "quality").collect().to_arrow(), series)
    read.append("polars")
    compare("pyarrow", by_pyarrow(dataset), expected)
    check_rows("pyarrow", lambda s, p: dataset.to_table(
        columns=["timestamp", "value", "quality"],
        filter=(ds.field("station") == s) & (ds.field("parameter") == p)), series)
    read.append("pyarrow")
    if vacuumed:
        compare("polars glob", by_polars(glob_lf()), expected)
        compare("pyarrow glob", by_pyarrow(glob_ds()), expected)
        read.append("globs")
    print(f"open archive: {len(expected)} series agree ({', '.join(read)})")


if __name__ == "__main__":
    main()
