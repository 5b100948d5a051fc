package sdk

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Names of floe's metadata columns. They follow the value columns in every
// [Batch]; value columns may not start with "__".
const (
	// ColumnOffset is the record's position in its source partition (int64).
	ColumnOffset = "__offset"
	// ColumnTimestamp is the record's source timestamp (timestamp[ms, UTC]).
	ColumnTimestamp = "__timestamp"
	// ColumnKey is the record's key, raw bytes (binary, nullable).
	ColumnKey = "__key"
	// ColumnHeaders holds the record's headers (map<string, binary>,
	// nullable). Optional: a source without headers leaves it out.
	ColumnHeaders = "__headers"
)

// IsMetadataColumn reports whether a column name is reserved for floe.
func IsMetadataColumn(name string) bool {
	return len(name) >= 2 && name[0] == '_' && name[1] == '_'
}

// Batch is a run of records from one source partition.
//
// Records holds the value columns followed by the metadata columns
// ([ColumnOffset] and [ColumnTimestamp] always, [ColumnKey] and
// [ColumnHeaders] when the source has them). Offsets rise within a batch.
//
// From and Next say which source positions the batch covers: everything in
// [From, Next) was consumed, and rows for all of it are in Records except
// Skipped ones, which went to the dead-letter queue. A source's batches of
// one partition chain: each From equals the previous Next.
type Batch struct {
	Partition string
	From      int64
	Next      int64
	// SchemaID names the value schema, announced before the first batch of
	// that schema through [SourceHost.AdmitSchema].
	SchemaID int64
	Records  arrow.RecordBatch
	Skipped  int64
}

// Schema is one value schema as it travels between plugins.
type Schema struct {
	// ID is unique per connector: the Schema Registry id for Kafka sources.
	ID int64
	// Avro is the Avro schema JSON, when the source has one.
	Avro string
	// Arrow describes the value columns (metadata columns excluded).
	Arrow *arrow.Schema
	// Subject is the Schema Registry subject, when there is one.
	Subject string
}
