package datagen

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/sdk"
)

// Config keys.
const (
	KeyShape          = "datagen.shape"
	KeySchemaFile     = "datagen.schema.file"
	KeyRate           = "datagen.rate"
	KeyCount          = "datagen.count"
	KeyPartitions     = "datagen.partitions"
	KeyKeyField       = "datagen.key.field"
	KeyKeyCardinality = "datagen.key.cardinality"
	KeyKeySkew        = "datagen.key.skew"
	KeyZipfS          = "datagen.key.zipf.s"
	KeySeed           = "datagen.seed"
	KeyBatchSize      = "datagen.batch.size"
	KeyTimestampStart = "datagen.timestamp.start"
	KeyTimestampStep  = "datagen.timestamp.step.ms"
)

// maxBatchSize bounds datagen.batch.size: a batch is built in memory.
const maxBatchSize = 1_000_000

// defaultBatchSize is datagen.batch.size unset. Every batch costs each
// process it crosses a Read, a Partition and a Write call, so bulk runs
// want big ones: in the datagen benchmark (bench-results/2026-12-07.md)
// the host spent 0.29-0.30 CPU-us per record at 5,000 rows, 0.14-0.15 at
// 20,000, the partitioner 0.14 and 0.07, this plugin 0.58-0.60 and
// 0.48-0.52; the sink cuts big batches into pieces its writers handle
// well (plugins/iceberg itemRows). About 5 MB of Arrow per batch for the
// benchmark's 10-field event.
const defaultBatchSize = 20_000

// maxZipfCardinality bounds datagen.key.cardinality under zipf skew: the
// sampler keeps an 8-byte CDF entry per key.
const maxZipfCardinality = 50_000_000

// spec declares the datagen source's config.
func spec() sdk.Spec {
	const g = "Datagen"
	return sdk.NewSpec(
		sdk.String(KeyShape).Default(generate.ShapeOrders).OneOf(generate.Shapes()...).InGroup(g).Rank(sdk.High).
			Describe("Built-in record shape: orders (shop orders keyed by customer_id) or clickstream (web events keyed by user_id). Ignored when datagen.schema.file is set."),
		sdk.String(KeySchemaFile).InGroup(g).Rank(sdk.High).WithExample("/etc/floe/shapes/payments.avsc").
			Describe("Path of an Avro record schema (.avsc) to generate instead of a built-in shape. Fields may carry datagen.* properties (min, max, null, values, keys, prefix, suffix, kind) to steer the values; see the datagen package docs."),
		sdk.Double(KeyRate).Default("0").Min(0).InGroup(g).
			Describe("Records per second for the whole connector, shared among its tasks by the partitions they own; 0 generates as fast as the pipeline takes them."),
		sdk.Long(KeyCount).Default("0").Min(0).InGroup(g).
			Describe("Total records for the connector, split evenly over the partitions (the first count % partitions get one more); 0 is unbounded. A task whose partitions are all done ends its input."),
		sdk.Int(KeyPartitions).Min(1).InGroup(g).
			Describe("Number of source partitions (named <shape>/<p>), dealt to tasks round-robin (partition p goes to task p % tasks.max). Default: tasks.max."),
		sdk.String(KeyKeyField).InGroup(g).WithExample("customer_id").
			Describe("Field whose value is the record key (__key), dotted for nested records; an int, long or string field. Default: the shape's key (customer_id for orders, user_id for clickstream) or the schema's datagen.key property; a schema without one has no key."),
		sdk.Int(KeyKeyCardinality).Default("10000").Min(1).InGroup(g).
			Describe("Number of distinct keys."),
		sdk.String(KeyKeySkew).Default(string(generate.Uniform)).OneOf(string(generate.Uniform), string(generate.Zipf)).InGroup(g).
			Describe("Key distribution: uniform, or zipf (key rank k drawn with probability proportional to 1/(k+1)^s: a few hot keys)."),
		sdk.Double(KeyZipfS).Default("1.1").InGroup(g).Check(positive).
			Describe("Zipf exponent s when datagen.key.skew is zipf; larger is more skewed."),
		sdk.Long(KeySeed).Default("42").InGroup(g).
			Describe("Random seed. The record at (partition, offset) depends only on the seed, the schema and its position, so a replay regenerates identical rows."),
		sdk.Int(KeyBatchSize).Default(strconv.Itoa(defaultBatchSize)).Min(1).Max(maxBatchSize).InGroup(g).
			Describe("Records per batch (smaller when a rate limit is set: about a tenth of a second of the task's rate)."),
		sdk.String(KeyTimestampStart).Default("2026-01-01T00:00:00Z").InGroup(g).Check(rfc3339).
			Describe("Event time (the ts field and every other timestamp or date field) of offset 0, RFC 3339."),
		sdk.Long(KeyTimestampStep).Default("1000").Min(1).InGroup(g).
			Describe("Milliseconds event time advances per record in each partition, so day(ts) partitions fill deterministically (86400 records per day per partition at the default)."),
	)
}

func positive(v string) error {
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil || !(f > 0) {
		return errors.New("must be greater than 0")
	}
	return nil
}

func rfc3339(v string) error {
	if _, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err != nil {
		return fmt.Errorf("must be an RFC 3339 time such as 2026-01-01T00:00:00Z: %w", err)
	}
	return nil
}

// settings is a task's validated config.
type settings struct {
	// name prefixes the partition names: the shape, or the schema's name.
	name       string
	schemaJSON string
	schema     avro.Schema
	opts       generate.Options
	rate       float64
	count      int64
	partitions int
	batchSize  int
}

// parseSettings validates a connector config (defaults applied by the
// spec) for a connector of tasks tasks. Errors name the key.
func parseSettings(raw sdk.Config, tasks int) (settings, error) {
	cfg, err := spec().Parse(raw.Map())
	if err != nil {
		return settings{}, err
	}
	r := cfg.Reader()
	s := settings{
		rate:       r.Float64(KeyRate),
		count:      r.Int64(KeyCount),
		partitions: r.Int(KeyPartitions),
		batchSize:  r.Int(KeyBatchSize),
	}
	if s.partitions == 0 {
		s.partitions = max(tasks, 1)
	}
	if file := strings.TrimSpace(cfg.String(KeySchemaFile)); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return settings{}, fmt.Errorf("%s: %w", KeySchemaFile, err)
		}
		s.schemaJSON = string(b)
		if s.schema, err = generate.Parse(s.schemaJSON); err != nil {
			return settings{}, fmt.Errorf("%s: %s: %w", KeySchemaFile, file, err)
		}
		rs, ok := s.schema.(*avro.RecordSchema)
		if !ok {
			return settings{}, fmt.Errorf("%s: %s: the schema is a %s, want a record", KeySchemaFile, file, s.schema.Type())
		}
		s.name = rs.Name()
	} else {
		s.name = cfg.String(KeyShape)
		js, err := generate.ShapeSchema(s.name)
		if err != nil {
			return settings{}, fmt.Errorf("%s: %w", KeyShape, err)
		}
		s.schemaJSON = js
		if s.schema, err = generate.Parse(js); err != nil {
			return settings{}, fmt.Errorf("%s: %s: %w", KeyShape, s.name, err)
		}
	}
	start, _ := time.Parse(time.RFC3339, strings.TrimSpace(cfg.String(KeyTimestampStart)))
	s.opts = generate.Options{
		Seed:           uint64(r.Int64(KeySeed)),
		KeyField:       strings.TrimSpace(cfg.String(KeyKeyField)),
		KeyCardinality: r.Int(KeyKeyCardinality),
		KeySkew:        generate.Skew(cfg.String(KeyKeySkew)),
		ZipfS:          r.Float64(KeyZipfS),
		TimestampStart: start,
		TimestampStep:  time.Duration(r.Int64(KeyTimestampStep)) * time.Millisecond,
	}
	if err := r.Err(); err != nil {
		return settings{}, err
	}
	if s.opts.KeySkew == generate.Zipf && s.opts.KeyCardinality > maxZipfCardinality {
		return settings{}, fmt.Errorf("%s: %d keys under zipf skew is more than %d", KeyKeyCardinality, s.opts.KeyCardinality, maxZipfCardinality)
	}
	return s, nil
}
