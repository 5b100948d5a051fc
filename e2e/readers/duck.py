"""DuckDB with its Iceberg and Avro extensions, loaded offline.

DuckDB normally downloads extensions on first use, which the test machines
cannot do. The duckdb-extension-* packages on PyPI ship the official
(signed) extension binaries as package data, at

    site-packages/duckdb_extension_<name>/extensions/v<duckdb version>/<name>.duckdb_extension

so we LOAD them by path and turn autoinstall off: a missing extension then
fails loudly instead of reaching for the network.
"""

import importlib
from pathlib import Path

import duckdb

# Avro first: the iceberg extension reads manifests through it and would
# otherwise try to autoload it from ~/.duckdb. httpfs reads s3:// files.
EXTENSIONS = ("avro", "httpfs", "iceberg")


def extension_path(name: str) -> Path:
    """The extension file shipped by the duckdb-extension-<name> package."""
    pkg = importlib.import_module(f"duckdb_extension_{name}")
    base = Path(pkg.__file__).parent / "extensions"
    want = base / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if want.is_file():
        return want
    found = sorted(base.glob(f"v*/{name}.duckdb_extension"))
    raise RuntimeError(
        f"duckdb {duckdb.__version__} has no {name} extension in {base} "
        f"(found: {[str(p) for p in found]}); pin duckdb and "
        f"duckdb-extension-{name} to the same version in requirements.txt"
    )


def _literal(v: str) -> str:
    """v as a SQL string literal (CREATE SECRET takes no parameters)."""
    return "'" + str(v).replace("'", "''") + "'"


def connect(database: str = ":memory:", s3: dict | None = None) -> "duckdb.DuckDBPyConnection":
    """A DuckDB connection with the iceberg, avro and httpfs extensions
    loaded. s3, when given, is an S3-compatible store to read s3:// paths
    from: {"endpoint": "http://127.0.0.1:9000", "key_id", "secret",
    "region"}, path-style."""
    con = duckdb.connect(database, config={"autoinstall_known_extensions": False})
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_path(name)}'")
    if s3:
        endpoint = s3["endpoint"]
        use_ssl = endpoint.startswith("https://")
        host = endpoint.split("://", 1)[-1].rstrip("/")
        con.execute(
            "CREATE SECRET floe_s3 (TYPE s3, KEY_ID {}, SECRET {}, REGION {}, ENDPOINT {}, "
            "URL_STYLE 'path', USE_SSL {})".format(
                _literal(s3["key_id"]), _literal(s3["secret"]), _literal(s3.get("region") or "us-east-1"),
                _literal(host), "true" if use_ssl else "false",
            )
        )
    return con
