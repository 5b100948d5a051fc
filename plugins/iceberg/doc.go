// Package iceberg is floe's Apache Iceberg sink: it turns batches of source
// records into rows of Iceberg tables, exactly once, in two phases.
//
// # Phase 1: writers
//
// Write splits each batch by writer (the partitioner's choice) and by table
// (routing), and hands the pieces to the writers' bounded queues. Each
// writer keeps, per checkpoint and table, one open [table.WriteRecords]
// pipeline that rolls Parquet files at the target size. Flush closes a
// checkpoint's pipelines and returns, per writer, a payload that describes
// the data files (see payload.go). Nothing is registered in the catalog:
// a crash leaves orphan files, never visible rows.
//
// # Phase 2: the committer
//
// Commit registers a checkpoint's files with one Iceberg commit per table.
// The snapshot summary records the connector, the checkpoint id and the
// cumulative per-partition frontier (floe.offsets). Before committing, the
// committer fences: every source range of the checkpoint must start where
// the table's frontier stands (see fencing.go). A checkpoint already present
// in the table (a lost response) is not committed twice.
//
// # Recovery
//
// Frontier walks each table's history back to this connector's newest
// commit and answers, per partition, the position to resume from. Writers
// drop rows a table already holds, so replays write nothing twice.
//
// # Schemas
//
// PrepareSchema creates a table (with floe's source metadata columns and
// the configured partition spec) or evolves it, using package schemas for
// the Arrow to Iceberg mapping and the evolution rules.
//
// [table.WriteRecords]: https://pkg.go.dev/github.com/apache/iceberg-go/table#WriteRecords
package iceberg
