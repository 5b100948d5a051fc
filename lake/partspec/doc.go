// Package partspec is floe's one reading of Iceberg partition specs as
// users write them (the iceberg.tables.default-partition-by and
// iceberg.table.<name>.partition-by keys) and its one way of naming a
// partition for people. These are Iceberg table partitions, not Kafka's.
//
// # Who uses it
//
// The iceberg sink binds parsed terms to a table schema ([Bind]) when it
// creates a table; the hash partitioners hash records by the same terms so
// that each writer holds few table partitions. Both validate the keys with
// [Parse], so a spec one accepts the other accepts too. [Label] names the
// fullest partition in `floe table describe`, the connector status and
// /metrics alike.
//
// # Syntax
//
// A comma list of terms, as the Kafka Connect Iceberg sink and Spark SQL
// write them: col (identity), identity(col), year(col), month(col),
// day(col), hour(col) (also years, months, days, hours and date),
// bucket(N, col), truncate(W, col) (also trunc) and void(col). Bucket and
// truncate take their two arguments in either order: bucket(16, id) is
// Spark's, bucket(id, 16) Kafka Connect's. A column is a top-level name
// or a dotted path into struct columns. Two terms may not make the same
// partition field (day(ts), day(ts)).
package partspec
