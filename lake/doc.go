// Package lake is floe's shared access to Iceberg catalogs: opening the
// catalog a connector config names, and reading the snapshot-summary
// conventions floe's commits follow. The iceberg sink and maintenance
// plugins and floe's table commands all use it, so a connector's catalog
// keys mean the same thing everywhere. The sink and compaction write
// data files through [WriteView] with [WriterProps]: the table's
// properties over floe's Parquet page size, the connector's over both.
//
// # Catalog keys
//
// iceberg.catalog.type (sql, rest, glue, hive, hadoop), iceberg.catalog.uri,
// iceberg.catalog.warehouse, iceberg.catalog.name, and any other
// iceberg.catalog.* key passed to iceberg-go. With type sql and no URI, the
// catalog is the embedded SQLite file <floe.data.dir>/catalog.db and the
// warehouse <floe.data.dir>/warehouse.
//
// The rest, glue, hive and hadoop catalogs and the object stores register
// themselves when package lake/backends is linked into a binary.
//
// # Snapshot summaries
//
// Every floe commit records floe.connector, floe.checkpoint, floe.offsets
// (cumulative next positions per source partition), floe.committer.id and
// floe.committer.epoch; see docs/architecture.md.
//
// # Maintenance history
//
// The iceberg-maintenance plugin records each task run as a JSON line
// ([MaintenanceRecord]) in <floe.data.dir>/maintenance/<connector>.jsonl;
// `floe table describe` reads the same files.
package lake
