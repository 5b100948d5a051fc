#!/usr/bin/env python3
"""Time one full scan of an Iceberg table, for the maintenance benchmark.

    scan_time.py --engine duckdb|pyiceberg --metadata /…/v12.metadata.json --column quantity

prints one JSON object:

    {"engine": "duckdb", "rows": 1000, "sum": 50500, "seconds": 0.123}

The query is `SELECT count(*), sum(<column>)` over every row. The clock
covers what a user's query pays for: reading the metadata file, planning
(manifest list, manifests) and reading the data files; it leaves out the
interpreter's start, the imports and loading DuckDB's extensions.
DuckDB reads the metadata file with iceberg_scan (a new connection per
run, so nothing is cached between runs); PyIceberg opens it as a
StaticTable and scans the one column to Arrow.

e2e/readers/duck.py loads DuckDB's extensions offline; this script runs
with the readers' venv (FLOE_PYTHON).
"""

import argparse
import json
import os
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", choices=("duckdb", "pyiceberg"), required=True)
    p.add_argument("--metadata", required=True)
    p.add_argument("--column", required=True)
    args = p.parse_args()
    meta = args.metadata
    if meta.startswith("file://"):
        meta = meta[len("file://"):]
    col = '"' + args.column.replace('"', '""') + '"'

    if args.engine == "duckdb":
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "readers"))
        import duck

        con = duck.connect()
        path = meta.replace("'", "''")
        start = time.perf_counter()
        rows, total = con.execute(f"SELECT count(*), sum({col}) FROM iceberg_scan('{path}')").fetchone()
        seconds = time.perf_counter() - start
    else:
        import pyarrow.compute as pc
        from pyiceberg.table import StaticTable

        start = time.perf_counter()
        tbl = StaticTable.from_metadata(meta)
        arrow = tbl.scan(selected_fields=(args.column,)).to_arrow()
        rows = arrow.num_rows
        total = pc.sum(arrow.column(args.column)).as_py()
        seconds = time.perf_counter() - start
    json.dump({"engine": args.engine, "rows": int(rows), "sum": total, "seconds": seconds}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
