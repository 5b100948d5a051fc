// Package datagen is floe's datagen source: it generates realistic Avro
// records at a set rate, for demos, tests and benchmarks, and needs no
// external system. The binary is cmd/floe-plugin-datagen; connectors pick
// it with "source": "datagen".
//
// # Shapes
//
// A built-in shape (datagen.shape) or a user's Avro record schema
// (datagen.schema.file) says what the records look like:
//
//   - orders: a shop order of about 190 bytes of Avro, keyed by
//     customer_id: a uuid order_id, the event time ts (timestamp-micros),
//     enums, bytes decimal(12,2) amounts, an array of line items (records),
//     a nullable shipping address (record), nullable coupon and shipped_at,
//     a date and a string map.
//   - clickstream: a web event of about 210 bytes, keyed by user_id, with
//     nested page, device and nullable geo records, a map, an array, an
//     IPv4 string and a nullable decimal.
//
// Fields of a user schema get values by type; Avro properties named
// datagen.* (min, max, null, values, keys, prefix, suffix, kind) steer them
// as the built-in shapes do. package generate documents them.
//
// # Partitions and keys
//
// The connector has datagen.partitions partitions (default tasks.max),
// named <shape>/<p> (or <record name>/<p> for a user schema) and dealt to
// tasks round-robin. Each Read returns batches of datagen.batch.size
// records, one partition's consecutive offsets each, taking the task's
// partitions in turn. The key (__key) is the value of datagen.key.field,
// drawn from datagen.key.cardinality distinct keys, uniformly or with Zipf
// skew (datagen.key.skew, datagen.key.zipf.s): decimal text for integer
// fields, the string itself for string fields.
//
// Event time starts at datagen.timestamp.start for offset 0 of every
// partition and advances datagen.timestamp.step.ms per offset, so day(ts)
// partitions fill deterministically. __timestamp is the wall-clock time the
// batch was generated, so produce-to-visible latency can be measured.
//
// # Determinism
//
// The record at (partition p, offset o), its value columns and its key,
// depends only on (datagen.seed, the schema, p, o): the generator hashes
// the three into the record's own random state. Replaying after a crash
// from the host's start positions regenerates byte-identical rows, which
// is what floe's exactly-once tests compare against.
//
// # Rate and end of input
//
// datagen.rate caps the connector's records per second (each task gets the
// share of its partitions); Read sleeps for tokens within its ctx and
// returns no batches when ctx ends. With datagen.count set, a task whose
// partitions all reached their share returns [sdk.ErrEndOfInput].
package datagen
