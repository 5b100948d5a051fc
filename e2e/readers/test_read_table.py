"""Checks read_table.py itself: a table written by PyIceberg must read back
the same through both engines. Run with the readers venv:

    $FLOE_PYTHON -m pytest e2e/readers

With FLOE_POSTGRES_URL set (e2e/services/up) the catalog also runs on
Postgres, as floe's Go tests will use it.
"""

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

HERE = Path(__file__).resolve().parent
READ_TABLE = HERE / "read_table.py"

ROWS = 2500


def arrow_rows(start, n):
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "small": pa.array([i % 7 if i % 11 else None for i in ids], pa.int32()),
            "flag": pa.array([i % 2 == 0 for i in ids], pa.bool_()),
            "name": pa.array([f"user-{i % 100}" if i % 13 else None for i in ids], pa.string()),
            "score": pa.array([i / 3 for i in ids], pa.float64()),
            "price": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 400) for i in ids], pa.date32()),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i * 7) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "payload": pa.array([f"p{i}".encode() for i in ids], pa.binary()),
        }
    )


@pytest.fixture(params=["sqlite", "postgres"])
def table(request, tmp_path):
    kind = request.param
    if kind == "sqlite":
        uri = f"sqlite:///{tmp_path}/catalog.db"
    else:
        uri = os.environ.get("FLOE_POSTGRES_URL")
        if not uri:
            pytest.skip("FLOE_POSTGRES_URL not set; run e2e/services/up")
    sa_uri = uri.replace("postgres://", "postgresql+psycopg2://", 1)
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = SqlCatalog("floe", uri=sa_uri, warehouse=f"file://{warehouse}")
    ns = f"t_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(ns)
    data = arrow_rows(0, ROWS // 2)
    tbl = catalog.create_table(f"{ns}.events", schema=data.schema)
    tbl.append(data)
    tbl.append(arrow_rows(ROWS // 2, ROWS - ROWS // 2))
    tbl = catalog.load_table(f"{ns}.events")
    return {"uri": uri, "warehouse": str(warehouse), "name": f"{ns}.events", "table": tbl}


def read(engine, t, *extra, metadata=True):
    cmd = [
        sys.executable, str(READ_TABLE), "--engine", engine,
        "--catalog-uri", t["uri"], "--warehouse", t["warehouse"], "--table", t["name"], "--json",
    ]
    if metadata:
        cmd += ["--metadata", t["table"].metadata_location]
    out = subprocess.run(cmd + list(extra), check=True, capture_output=True, text=True).stdout
    return json.loads(out)


CHECKSUM_COLS = "id,small,flag,name,score,price,day,ts,payload"


def test_engines_agree(table):
    args = ("--checksum-col", CHECKSUM_COLS, "--distinct-cols", "small,name")
    py = read("pyiceberg", table, *args)
    duck = read("duckdb", table, *args)
    assert py["rows"] == duck["rows"] == ROWS
    assert py["checksum"] == duck["checksum"]
    assert py["distinct"] == duck["distinct"]
    assert [c for c, _ in py["schema"]] == [c for c, _ in duck["schema"]] == CHECKSUM_COLS.split(",")


def test_known_values(table):
    got = read("duckdb", table, "--checksum-col", "id,flag", "--distinct-cols", "name")
    assert got["checksum"]["id"] == ROWS * (ROWS - 1) // 2
    assert got["checksum"]["flag"] == ROWS // 2
    assert got["distinct"] == len({f"user-{i % 100}" if i % 13 else None for i in range(ROWS)})
    assert dict(got["schema"])["id"] == "BIGINT"
    py = read("pyiceberg", table, "--checksum-col", "id")
    assert dict(py["schema"])["id"] == "long"


def test_duckdb_finds_metadata_in_catalog(table):
    got = read("duckdb", table, metadata=False)
    assert got["rows"] == ROWS
    assert got["metadata"] == table["table"].metadata_location


def test_deletes_apply_in_both_engines(table):
    table["table"].delete("id < 100")
    table["table"] = table["table"].refresh()
    py = read("pyiceberg", table, "--checksum-col", "id")
    duck = read("duckdb", table, "--checksum-col", "id")
    assert py["rows"] == duck["rows"] == ROWS - 100
    assert py["checksum"] == duck["checksum"] == {"id": ROWS * (ROWS - 1) // 2 - 99 * 100 // 2}


def test_values_cols(table):
    # Both engines print the same rows, bytes as hex, in step across
    # columns.
    rows = {}
    for engine in ("pyiceberg", "duckdb"):
        got = read(engine, table, "--values-cols", "id,payload")
        ids, payloads = got["values"]["id"], got["values"]["payload"]
        assert len(ids) == len(payloads) == ROWS
        rows[engine] = sorted(zip(ids, (p["hex"] for p in payloads)))
    assert rows["pyiceberg"] == rows["duckdb"]
    assert rows["duckdb"][7] == (7, b"p7".hex())


def test_plain_keeps_empty_apart_from_null():
    sys.path.insert(0, str(HERE))
    import read_table

    arr = pa.array([[("k", b""), ("k", None), ("b", b"\x00\xff")], None],
                   pa.map_(pa.string(), pa.binary()))
    assert read_table.plain(arr.to_pylist()) == [
        [["k", {"hex": ""}], ["k", None], ["b", {"hex": "00ff"}]], None]
