package generate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/schemas"
)

// Defaults of [Options].
const (
	DefaultKeyCardinality = 10000
	DefaultZipfS          = 1.1
	DefaultTimestampStep  = time.Second
)

// DefaultTimestampStart is the event time of offset 0 of every partition.
var DefaultTimestampStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options steer a [Generator]. The zero value is valid: seed 0, the
// schema's own key field, 10000 uniform keys, event time from
// [DefaultTimestampStart] in steps of [DefaultTimestampStep].
type Options struct {
	Seed uint64
	// KeyField names the field (dotted for nested records) whose value is
	// the record key. Empty uses the record's "datagen.key" property; a
	// schema without one has no key.
	KeyField string
	// KeyCardinality is the number of distinct keys.
	KeyCardinality int
	KeySkew        Skew
	// ZipfS is the Zipf exponent, used when KeySkew is [Zipf].
	ZipfS float64
	// TimestampStart is the event time of offset 0; TimestampStep is how
	// far event time advances per offset, in every partition alike.
	TimestampStart time.Time
	TimestampStep  time.Duration
}

// Generator makes the records of one schema. The record at (partition p,
// offset o) depends only on the seed, the schema, the options, p and o.
//
// A Generator is not safe for concurrent use (it keeps a scratch buffer);
// make one per goroutine with [New], which is cheap.
type Generator struct {
	schema   *avro.RecordSchema
	arrow    *arrow.Schema
	fields   []gen
	arrows   []func(*state, array.Builder)
	keyField string
	keyText  func(dst []byte, rank uint64) []byte
	keys     keyDist
	seed     uint64
	start    int64
	step     int64
	st       state
}

// New compiles a generator for a record schema.
func New(schema avro.Schema, opts Options) (*Generator, error) {
	if ref, ok := schema.(*avro.RefSchema); ok {
		schema = ref.Schema()
	}
	rs, ok := schema.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("generate: schema is a %s, want a record", schema.Type())
	}
	as, err := schemas.ArrowSchema(rs)
	if err != nil {
		return nil, fmt.Errorf("generate: %s: Arrow schema: %w", rs.FullName(), err)
	}
	// The schema's fingerprint joins the seed, so two shapes make unrelated
	// records (and keys) at the same positions.
	fp := rs.Fingerprint()
	g := &Generator{
		schema: rs,
		arrow:  as,
		seed:   opts.Seed ^ binary.LittleEndian.Uint64(fp[:8]),
		start:  DefaultTimestampStart.UnixMicro(),
		step:   DefaultTimestampStep.Microseconds(),
	}
	if !opts.TimestampStart.IsZero() {
		g.start = opts.TimestampStart.UnixMicro()
	}
	switch {
	case opts.TimestampStep < 0:
		return nil, fmt.Errorf("generate: timestamp step %s is negative", opts.TimestampStep)
	case opts.TimestampStep > 0:
		g.step = opts.TimestampStep.Microseconds()
	}
	g.keyField = opts.KeyField
	if g.keyField == "" {
		if k, ok := rs.Prop(PropKey).(string); ok {
			g.keyField = k
		}
	}
	card := opts.KeyCardinality
	if card == 0 {
		card = DefaultKeyCardinality
	}
	s := opts.ZipfS
	if s == 0 {
		s = DefaultZipfS
	}
	if g.keyField != "" {
		if g.keys, err = newKeyDist(opts.KeySkew, card, s); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	c := &compiler{keyField: g.keyField, keyCard: uint64(card)}
	if c.keyField == "" {
		c.keyField = "\x00" // matches no field
	}
	if g.fields, err = c.fields("", rs, as.Fields()); err != nil {
		return nil, fmt.Errorf("generate: %s: %w", rs.FullName(), err)
	}
	g.arrows = make([]func(*state, array.Builder), len(g.fields))
	for i := range g.fields {
		g.arrows[i] = g.fields[i].arrow
	}
	if g.keyField != "" && c.keyText == nil {
		return nil, fmt.Errorf("generate: %s: %w %q: no such field (nested fields are dotted: address.city)", rs.FullName(), ErrKeyField, g.keyField)
	}
	g.keyText = c.keyText
	return g, nil
}

// ErrKeyField is wrapped by [New]'s errors about the key field: missing,
// or of a type that cannot be a key.
var ErrKeyField = errors.New("key field")

// Schema returns the Avro schema.
func (g *Generator) Schema() *avro.RecordSchema { return g.schema }

// ArrowSchema returns the Arrow schema of the value columns: the builders
// given to [Generator.AppendArrow] follow it.
func (g *Generator) ArrowSchema() *arrow.Schema { return g.arrow }

// KeyField returns the key field's dotted path, or "" without a key.
func (g *Generator) KeyField() string { return g.keyField }

// begin starts record (p, o).
func (g *Generator) begin(p int, o int64) {
	h := recordSeed(g.seed, p, o)
	g.st.x = h
	if g.keyText != nil {
		g.st.keyRank = g.keys.rank(mix64(h ^ keySalt))
	}
	g.st.eventMicros = g.start + o*g.step
}

// AppendArrow appends the value columns of record (p, o): cols[i] is a
// builder of column i of [Generator.ArrowSchema]. It allocates nothing
// beyond what the builders do.
func (g *Generator) AppendArrow(cols []array.Builder, p int, o int64) {
	g.begin(p, o)
	cols = cols[:len(g.arrows)]
	for i, f := range g.arrows {
		f(&g.st, cols[i])
	}
}

// AppendAvro appends record (p, o) in Avro binary encoding (no Confluent
// header): the same logical record as [Generator.AppendArrow].
func (g *Generator) AppendAvro(dst []byte, p int, o int64) []byte {
	g.begin(p, o)
	for i := range g.fields {
		dst = g.fields[i].avro(&g.st, dst)
	}
	return dst
}

// KeyRank returns the rank of record (p, o)'s key in [0, cardinality):
// with [Zipf] skew, rank 0 is the hottest key.
func (g *Generator) KeyRank(p int, o int64) uint64 {
	if g.keyText == nil {
		return 0
	}
	return g.keys.rank(mix64(recordSeed(g.seed, p, o) ^ keySalt))
}

// AppendKey appends record (p, o)'s key as floe's __key column holds it:
// the key field's value, in decimal for integers, as is for strings. It
// returns dst unchanged when the generator has no key.
func (g *Generator) AppendKey(dst []byte, p int, o int64) []byte {
	if g.keyText == nil {
		return dst
	}
	return g.keyText(dst, g.KeyRank(p, o))
}

// AppendLastKey appends the key of the record the last AppendArrow or
// AppendAvro call made, as [Generator.AppendKey] would, without hashing its
// position again.
func (g *Generator) AppendLastKey(dst []byte) []byte {
	if g.keyText == nil {
		return dst
	}
	return g.keyText(dst, g.st.keyRank)
}

// EventTime returns the event time of offset o (the same in every
// partition): TimestampStart + o × TimestampStep.
func (g *Generator) EventTime(o int64) time.Time {
	return time.UnixMicro(g.start + o*g.step).UTC()
}

// NewRecordBatch generates records [from, from+n) of partition p as a
// record batch of the value columns. The caller releases it.
func (g *Generator) NewRecordBatch(mem memory.Allocator, p int, from int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, g.arrow)
	defer b.Release()
	cols := b.Fields()
	g.Reserve(cols, n)
	for o := from; o < from+int64(n); o++ {
		g.AppendArrow(cols, p, o)
	}
	return b.NewRecordBatch()
}
