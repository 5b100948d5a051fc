// Package schemas turns Avro records from a Confluent-compatible Schema
// Registry into Arrow batches and Iceberg table schemas, and decides how a
// table's schema evolves when the records' schema changes.
//
// It is used by the kafka source (decoding), the datagen source (Avro
// schema to Arrow schema), the iceberg sink (creating and evolving tables,
// conforming batches) and benchmarks. It imports nothing else from floe.
//
// # Confluent wire format
//
// A Schema Registry serializer frames each message as one magic byte (0),
// the schema id as a big-endian int32, then the Avro binary payload.
// SplitConfluent takes a message apart (ErrBadMagic, ErrTruncated) and
// AppendConfluent builds one.
//
// # Avro to Arrow to Iceberg
//
// A record value's schema must be an Avro record. ArrowSchema gives one
// top-level Arrow field per Avro field, in order; IcebergSchema turns that
// into an Iceberg schema with fresh field ids. Types map as follows:
//
//	Avro                                   Arrow                               Iceberg
//	boolean                                Boolean                             boolean
//	int                                    Int32                               int
//	long                                   Int64                               long
//	float                                  Float32                             float
//	double                                 Float64                             double
//	bytes                                  Binary                              binary
//	string                                 String                              string
//	record                                 Struct                              struct
//	enum                                   String + "avro.enum" metadata       string
//	array                                  List                                list
//	map                                    Map<String, V>                      map<string, V>
//	fixed(n)                               FixedSizeBinary(n)                  fixed[n]
//	decimal(p,s) on bytes or fixed         Decimal128(p,s)                     decimal(p,s)
//	uuid on string or fixed(16)            arrow.uuid extension                uuid
//	date                                   Date32                              date
//	time-millis, time-micros               Time64(µs)                          time
//	timestamp-millis/-micros/-nanos        Timestamp(µs, "UTC")                timestamptz
//	local-timestamp-millis/-micros/-nanos  Timestamp(µs)                       timestamp
//	duration (fixed 12)                    Struct{months, days, millis Int32}  struct
//	union of 2+ non-null types             Struct, a field per branch          struct
//
// Notes:
//   - A field's doc becomes the Arrow field metadata "doc" and the Iceberg
//     column doc.
//   - Enum symbols are kept, comma separated, in the Arrow field metadata
//     "avro.enum"; adding symbols later needs no table change.
//   - uuid strings are decoded from their 36-character text into 16 bytes;
//     other text is a decode error.
//   - Nanosecond timestamps are truncated to microseconds, rounding toward
//     negative infinity (as iceberg-go does), since Iceberg v2 tables hold
//     microseconds. Millisecond values are scaled up.
//   - Decimals wider than 38 digits are rejected, naming the field.
//   - Logical types the package does not know fall back to their base type,
//     as the Avro specification says.
//   - Recursive records cannot be columns and are rejected, naming the
//     field.
//
// # Nullability and names
//
// The unions ["null", T] and [T, "null"] map to a nullable T; every other
// type is non-nullable (required in Iceberg), including a one-branch union
// [T]. One exception, at the Iceberg level only: map values are always
// optional, because iceberg-go v0.7.0 rebuilds maps with nullable values
// when it scans or projects them, which breaks tables whose map values are
// required (see IcebergSchema).
//
// A union of two or more non-null branches becomes a struct with one
// nullable field per branch, named after the branch's type ("int",
// "string", the short name of a record, enum or fixed, the logical type
// with "_" such as "timestamp_micros") and made unique with "_2", "_3"…;
// exactly one field is set per row, and the whole struct is null when the
// union has a null branch and the value is null.
//
// Field names must be unique within a record, and top-level names must not
// start with "__", which is reserved for floe's record metadata columns
// (__offset, __timestamp, __key, __headers). Errors name fields by their
// dotted path (customer.address.zip); inside lists and maps the path goes
// through "element", "key" and "value" as in Iceberg.
//
// # Decoding
//
// NewDecoder compiles an Avro schema into per-field decode functions that
// read with hamba/avro's Reader and append straight into Arrow builders: no
// maps, no reflection per record. Decoder.Append adds one row to a set of
// builders the caller owns (typically the value columns of a RecordBuilder
// that also has metadata columns); Decoder.DecodeBatch builds a value-only
// batch and reports bad payloads. A failed Append may leave the builders
// uneven; the caller rebuilds the batch without that payload.
//
// # Schema evolution
//
// PlanEvolution compares the table's schema with the Arrow schema of
// incoming records and lists the changes the table needs; Evolution.Stage
// applies them in an iceberg-go transaction. Automatic changes are exactly
// the ones Iceberg allows without rewriting data:
//   - add a column, at any depth (struct fields, fields of structs inside
//     lists and map values); new columns are always optional, even if the
//     record declares them required, because existing rows lack them;
//   - widen int to long, float to double, decimal(p,s) to decimal(p',s)
//     with p' > p;
//   - make a required column optional.
//
// Records narrower than the table are written as they are, after Conform
// widens them: an int field into a long column, a required field into an
// optional column, a record without an optional column (its rows get
// null), an enum with new symbols. So records of older schema versions keep
// flowing into a table evolved for newer ones.
//
// Everything else is an *IncompatibleError naming the column and both
// types: a type change that is not a widening (string and int, long and
// double, decimal scale, struct and list…), and a required column the
// record lacks. Column docs of existing columns are not updated, columns are
// never dropped or renamed, and new columns go at the end of their struct.
//
// Existing columns keep their field ids across evolution; iceberg-go
// assigns ids only to new columns.
//
// # Writing to Iceberg
//
// ArrowForTable gives the Arrow schema of the table (with field ids), and
// Conform turns a decoded batch of any earlier schema version into that
// schema: missing columns and nested fields become null, ints and floats
// are widened, fields are reordered. table.WriteRecords would do the same
// projection itself, but a batch that already matches the table's schema
// exactly skips it, and all batches of a checkpoint can then share one
// writer.
//
// The table property "schema.name-mapping.default" lets readers match files
// without field ids by name. iceberg-go does not set it on CreateTable; its
// AddDataFiles sets it (from the current schema) when missing; its
// UpdateSchema keeps it current only when given the mapping, which
// Evolution.Stage does. NameMappingJSON gives the value for a schema.
//
// # Schema Registry
//
// Registry talks to a Confluent-compatible registry (Confluent, Apicurio's
// /apis/ccompat/v7, Redpanda, Karapace) through riferrei/srclient, with
// basic auth and TLS. ByID caches schemas by id; Latest always asks;
// Register registers a schema under a subject. Subject names follow
// Confluent's strategies: TopicNameStrategy (<topic>-value, <topic>-key),
// RecordNameStrategy (<record full name>) and TopicRecordNameStrategy
// (<topic>-<record full name>). Schema references are resolved.
package schemas
