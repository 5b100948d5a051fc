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
# otherwise try to autoload it from ~/.duckdb.
EXTENSIONS = ("avro", "iceberg")


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


def connect(database: str = ":memory:") -> "duckdb.DuckDBPyConnection":
    """A DuckDB connection with the iceberg and avro extensions loaded."""
    con = duckdb.connect(database, config={"autoinstall_known_extensions": False})
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_path(name)}'")
    return con
