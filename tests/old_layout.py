#!/usr/bin/env python3
"""Turns a freshly written dataset directory (layout 4, month files only) into the same
dataset as layout 3 wrote it: month files in `month=` directories, the first station's years
(with `--pack-all` every station's) packed into `.pack` objects (month files back to back), a
files table without `path` and the columns after it, `format` 3. What `tests/compact.rs`
reads and compacts anew, and what `benches/s3.py` measures layout 4 against.

    old_layout.py DIR [--pack-all]
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def main():
    root = sys.argv[1]
    manifest_path = os.path.join(root, "manifest.json")
    manifest = json.load(open(manifest_path))
    assert manifest["format"] == 4, manifest["format"]
    table_path = os.path.join(root, manifest["catalog"]["files"])
    table = pq.read_table(table_path)
    rows = table.to_pylist()
    first = min(r["station"] for r in rows)
    pack_all = "--pack-all" in sys.argv[2:]
    # Each month file once, in the table's order.
    files = []
    for r in rows:
        assert r["row_group"] is None and r["pack"] is None, "not a fresh dataset"
        if not files or files[-1]["path"] != r["path"]:
            files.append({"path": r["path"], "station": r["station"], "month": r["month"],
                          "generation": r["generation"]})
    places = {}
    packs = {}
    for f in files:
        old = os.path.join(root, f["path"])
        if pack_all or f["station"] == first:
            year = f["month"][:4]
            pack = f"values/station={f['station']}/year={year}/months-{f['generation']}.pack"
            os.makedirs(os.path.dirname(os.path.join(root, pack)), exist_ok=True)
            with open(os.path.join(root, pack), "ab") as out:
                offset = out.tell()
                out.write(open(old, "rb").read())
            packs[pack] = True
            places[f["path"]] = (f["generation"], offset)
        else:
            new = f"values/station={f['station']}/month={f['month']}/part-{f['generation']}.parquet"
            os.makedirs(os.path.dirname(os.path.join(root, new)), exist_ok=True)
            os.rename(old, os.path.join(root, new))
            places[f["path"]] = (None, None)
        if os.path.exists(old):
            os.remove(old)
    pack = pa.array([places[p][0] for p in table.column("path").to_pylist()], pa.uint64())
    offset = pa.array([places[p][1] for p in table.column("path").to_pylist()], pa.uint64())
    keep = ["station", "month", "generation", "size", "parameter", "rows", "min", "max"]
    old_table = table.select(keep).append_column("pack", pack).append_column("offset", offset)
    pq.write_table(old_table, table_path)
    manifest["format"] = 3
    # Layout 3 was written before the newest months' table, which names month files by their
    # layout-4 paths.
    os.remove(os.path.join(root, manifest["catalog"].pop("newest")))
    text = json.dumps(manifest, separators=(",", ":"))
    open(manifest_path, "w").write(text)
    open(os.path.join(root, "versions", f"{manifest['generation']}.json"), "w").write(text)
    print(f"layout 3: {len(files)} month files, {len(packs)} packs")


if __name__ == "__main__":
    main()
