package partitioners

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/floehq/floe/lake/partspec"
	"github.com/floehq/floe/sdk"
)

// Config keys the partitioners declare.
const (
	keyFields           = "partitioner.fields"
	keySkewHotThreshold = "partitioner.skew.hot-threshold"
	keySkewDecay        = "partitioner.skew.decay"
	keySkewSpread       = "partitioner.skew.spread-factor"
	keySkewWidth        = "partitioner.skew.sketch.width"
	keySkewDepth        = "partitioner.skew.sketch.depth"
	keySkewHeavy        = "partitioner.skew.heavy-hitters"
)

// Defaults of the skew-aware partitioner.
const (
	defaultDecay  = 1_000_000
	defaultSpread = 2.0
	defaultWidth  = 2048
	defaultDepth  = 4
	defaultHeavy  = 64
	maxDepth      = 16
)

const groupPartitioner = "Partitioner"

func fieldsField() *sdk.Field {
	return sdk.List(keyFields).
		Describe("Comma list of the columns whose values pick a record's writer: top-level names, dotted paths into " +
			"struct columns (customer.id), or __key for the record key. Records with equal values go to the same writer. " +
			"Unset: the columns of the sink table's partition spec (iceberg.tables.default-partition-by), transformed as " +
			"Iceberg transforms them, so each table partition is written by one writer; with no partition spec either, " +
			"the record key. A name the batch lacks fails the task at its first batch, naming the columns it has.").
		WithExample("customer_id").
		InGroup(groupPartitioner).
		Rank(sdk.High).
		Check(func(v string) error {
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				if err := partspec.CheckColumn(f); err != nil {
					return err
				}
			}
			return nil
		})
}

// skewSpec is the skew-aware component's spec.
func skewSpec() sdk.Spec {
	return sdk.NewSpec(append(append([]*sdk.Field{fieldsField()}, sinkFields()...), skewFields()...)...)
}

// sinkFields declares the sink's keys the hash partitioners read to hash
// by the table's partition spec (see partitionBy). A plugin receives only
// the keys its spec declares, so they are declared here too; the sink
// owns and documents them.
func sinkFields() []*sdk.Field {
	return []*sdk.Field{
		sdk.List(keyTables).
			Describe("The sink's tables (declared by the iceberg sink): with one table, its own partition spec " +
				"(iceberg.table.<table>.partition-by) applies.").
			InGroup(groupPartitioner).Rank(sdk.Low),
		sdk.String(keyDefaultPartitionBy).
			Describe("The sink's partition spec of created tables (declared by the iceberg sink): the default key " +
				"when partitioner.fields is unset.").
			InGroup(groupPartitioner).Rank(sdk.Low).
			Check(func(v string) error { _, err := partspec.Parse(v); return err }),
		sdk.Prefix(prefixTable).
			Describe("The sink's per-table settings (declared by the iceberg sink); " +
				"iceberg.table.<table>.partition-by is read.").
			InGroup(groupPartitioner).Rank(sdk.Low),
	}
}

func skewFields() []*sdk.Field {
	return []*sdk.Field{
		sdk.Double(keySkewHotThreshold).
			Describe("Share of the recent load above which a key is hot and its records are spread over several writers, " +
				"between 0 and 1. Unset: 1/(2 × writers), half a writer's fair share. A hot key stays hot until its share " +
				"falls below 0.8 × this.").
			WithExample("0.05").
			InGroup(groupPartitioner).
			Check(openInterval(keySkewHotThreshold, 0, 1)),
		sdk.Long(keySkewDecay).
			Describe("Half-life of the load statistics, in records: a record this many records ago weighs half as " +
				"much as the latest one, so the hot set follows changing load.").
			Default(strconv.Itoa(defaultDecay)).
			InGroup(groupPartitioner).
			Min(1),
		sdk.Double(keySkewSpread).
			Describe("A hot key with share s of the load is spread over ceil(s × writers × this) writers (at most all " +
				"of them). 1 gives those writers exactly a fair share of the key and no room for their other keys; 2 " +
				"leaves them half their capacity.").
			Default(strconv.FormatFloat(defaultSpread, 'g', -1, 64)).
			InGroup(groupPartitioner).
			Min(1),
		sdk.Int(keySkewWidth).
			Describe("Counters per row of the Count-Min sketch that estimates each key's load. Estimates err by at most " +
				"about e/width of the total load (2048: 0.13 %).").
			Default(strconv.Itoa(defaultWidth)).
			InGroup(groupPartitioner).
			Rank(sdk.Low).
			Min(16).Max(1 << 24),
		sdk.Int(keySkewDepth).
			Describe("Rows of the Count-Min sketch: each row makes an estimate that errs more than the width allows " +
				"e times less likely.").
			Default(strconv.Itoa(defaultDepth)).
			InGroup(groupPartitioner).
			Rank(sdk.Low).
			Min(1).Max(maxDepth),
		sdk.Int(keySkewHeavy).
			Describe("How many of the heaviest keys the partitioner tracks by name; only tracked keys can be hot.").
			Default(strconv.Itoa(defaultHeavy)).
			InGroup(groupPartitioner).
			Rank(sdk.Low).
			Min(1).Max(1 << 16),
	}
}

// openInterval accepts numbers in (lo, hi].
func openInterval(key string, lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil && !(f > lo && f <= hi) {
			return fmt.Errorf("must be greater than %v and at most %v, got %v", lo, hi, f)
		}
		return nil
	}
}

// skewConfig is the skew-aware partitioner's validated config.
type skewConfig struct {
	threshold float64 // hot share
	halfLife  float64 // records
	spread    float64
	width     int
	depth     int
	heavy     int
}

// skewConfigFrom reads the skew keys. The host validates them against
// the spec before Open; parsing again against the same spec (which holds
// every range and default) gives a direct caller (a test, an embedding
// program) the same errors.
func skewConfigFrom(raw sdk.Config, writers int) (skewConfig, error) {
	cfg, err := skewSpec().Parse(raw.Map())
	if err != nil {
		return skewConfig{}, err
	}
	r := cfg.Reader()
	c := skewConfig{
		threshold: r.Float64(keySkewHotThreshold),
		halfLife:  float64(r.Int64(keySkewDecay)),
		spread:    r.Float64(keySkewSpread),
		width:     r.Int(keySkewWidth),
		depth:     r.Int(keySkewDepth),
		heavy:     r.Int(keySkewHeavy),
	}
	if err := r.Err(); err != nil {
		return skewConfig{}, err
	}
	if c.threshold == 0 { // unset: half a writer's fair share
		c.threshold = 1 / (2 * float64(writers))
	}
	return c, nil
}
