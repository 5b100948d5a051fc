// Package generate makes deterministic records from an Avro record schema,
// straight into Arrow builders or as Avro binary. The datagen source uses
// it; benchmarks and end-to-end tests use it to know, without reading
// anything back, which rows a table must hold.
//
// # Determinism
//
// The record at (partition p, offset o) depends only on the options' seed,
// the schema, p and o: [Generator.AppendArrow] and [Generator.AppendAvro]
// hash (seed, schema fingerprint, p, o) into the record's random state
// (splitmix64) and every field draws from it in schema order. The key
// draws from a stream of its own, so [Generator.AppendKey] costs a hash and
// a table lookup. Event-time fields are TimestampStart + o × TimestampStep.
//
// # Arrow and Avro agree
//
// A schema is compiled once into closures per field. Each leaf value is
// made by one closure and written by two (Arrow, Avro), so the Arrow row
// and the Avro bytes of a record are the same logical record: decoding
// AppendAvro's bytes with schemas.NewDecoder gives AppendArrow's columns.
// The Arrow layout is schemas.ArrowSchema's; the generator follows it.
// The Arrow path allocates nothing beyond what the builders do, and
// [Generator.Reserve] sizes a batch's builders up front from the schema's
// mean value sizes, so they do not grow value by value.
//
// # Keys
//
// The key field (Options.KeyField, or the record's "datagen.key" property)
// takes KeyCardinality distinct values. Key rank k is drawn uniformly or
// with Zipf skew, P(k) ∝ 1/(k+1)^s, by binary search in a CDF table built
// once. An int or long key field holds min+k (min defaults to 1); a string
// key field holds prefix+(min+k)+suffix (min defaults to 0), or a UUID
// hashed from k when it is a uuid. The key field is in every record: it may
// be nested in records but not inside an array, a map or a nullable record,
// and when it is itself nullable it is never null.
//
// # Steering values
//
// Without hints a field gets a value of its type: ints in [0, 1000], longs
// in [0, 1e9], doubles in [0, 1000), strings of 5 to 12 letters, arrays of
// 0 to 5 items, maps of 0 to 3 entries, nullable unions null one time in
// ten, timestamps, dates and times at the record's event time. These Avro
// properties, on a field or on a type object, change that:
//
//	datagen.min, datagen.max  bounds of numbers (decimals: unscaled), string
//	                          and bytes lengths, array and map sizes, the
//	                          number of a prefix/suffix string, and a
//	                          timestamp's offset from event time in ms
//	datagen.null              probability that a nullable union is null
//	datagen.values            the strings a string takes
//	datagen.keys              the keys a map draws from (distinct per map)
//	datagen.prefix, .suffix   strings prefix+number+suffix
//	datagen.kind              "uuid" or "ipv4" strings
//	datagen.key               on the record: the default key field
//
// Unions of several non-null types, and Avro durations, are not generated:
// [New] says which field.
package generate
