package partitioners

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
)

// keyer computes a 64-bit key for every record of a batch, as its keySpec
// says, and maps keys to their home writer. Safe for concurrent use.
//
// Records with equal keys have equal key parts, so equal keys; for
// partition-spec terms that means every row of one Iceberg partition has one
// key and so one home writer.
type keyer struct {
	spec  keySpec
	route router
	// who names the partitioner in errors ("hash partitioner").
	who string

	mu    sync.Mutex                 // serialises adding a binding
	cache atomic.Pointer[[]*binding] // recent schemas, copy on write
	pool  sync.Pool                  // *scratch
}

func newKeyer(who string, spec keySpec, writers int) *keyer {
	return &keyer{
		spec:  spec,
		who:   who,
		route: router{w: uint32(writers), mod: newModulus(uint32(writers)), aligned: spec.bucket >= 0},
	}
}

// columns lists the top-level columns the key spec can read, for
// sdk.PartitionerWithColumns: each term's column, and for a dotted path
// every prefix too, since "a.b.c" may name a column "a" or "a.b" with
// nested fields as well as a column "a.b.c" (see resolveIn).
func (k *keyer) columns() []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, t := range k.spec.terms {
		for i := range len(t.path) {
			if t.path[i] == '.' {
				add(t.path[:i])
			}
		}
		add(t.path)
	}
	return out
}

// router maps a key to its home writer.
type router struct {
	w   uint32
	mod modulus
	// aligned: the key holds a bucket number in its low 32 bits and a hash
	// of the other partition values in its high 32 bits. The buckets of one
	// partition-value combination then land on consecutive writers, so 16
	// buckets over 8 writers give each writer exactly two; hashing the
	// bucket numbers instead would leave some writers with four and some
	// with none.
	aligned bool
}

func (r router) home(key uint64) uint32 {
	if r.aligned {
		return r.mod.mod(r.mod.mod(uint32(key>>32)) + uint32(key))
	}
	return fastRange(key, r.w)
}

// scratch holds per-call buffers, pooled so Partition allocates only its
// result.
type scratch struct {
	keys, part []uint64
	ints       []int64
}

func (k *keyer) scratch(n int) *scratch {
	s, _ := k.pool.Get().(*scratch)
	if s == nil || cap(s.keys) < n {
		c := max(n, 1024)
		s = &scratch{keys: make([]uint64, c), part: make([]uint64, c), ints: make([]int64, c)}
	}
	s.keys, s.part, s.ints = s.keys[:n], s.part[:n], s.ints[:n]
	return s
}

func (k *keyer) release(s *scratch) { k.pool.Put(s) }

// binding is a keySpec resolved against one batch schema.
type binding struct {
	schema *arrow.Schema
	terms  []boundTerm
	// aligned is the index in terms of the raw bucket term, or -1.
	aligned int
	// keyCol is the record key's column for a byKey spec, -1 if the batch
	// has none (then every record's key is null).
	keyCol int
}

type boundTerm struct {
	path []int // top-level column, then struct children
	fn   termFn
	null uint64
}

const maxBindings = 8

// bind returns the binding for a batch schema, resolving the key spec's
// columns the first time the schema is seen. Errors name the config key,
// the field, and the columns the batch has.
func (k *keyer) bind(s *arrow.Schema) (*binding, error) {
	if c := k.cache.Load(); c != nil {
		for _, b := range *c {
			if b.schema.Equal(s) {
				return b, nil
			}
		}
	}
	b, err := k.compile(s)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var next []*binding
	if c := k.cache.Load(); c != nil {
		next = append(next, (*c)[:min(len(*c), maxBindings-1)]...)
	}
	next = append([]*binding{b}, next...)
	k.cache.Store(&next)
	return b, nil
}

func (k *keyer) compile(s *arrow.Schema) (*binding, error) {
	b := &binding{schema: s, aligned: -1, keyCol: -1}
	if k.spec.byKey {
		if idx := s.FieldIndices(k.spec.terms[0].path); len(idx) > 0 {
			b.keyCol = idx[0]
		} else {
			return b, nil
		}
	}
	for i, t := range k.spec.terms {
		path, dt, err := resolvePath(s, t.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", k.who, k.spec.from, err)
		}
		raw := i == k.spec.bucket
		fn, err := compileTerm(t, dt, raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", k.who, k.spec.from, err)
		}
		if raw {
			b.aligned = i
		}
		b.terms = append(b.terms, boundTerm{path: path, fn: fn, null: nullPart(t, raw)})
	}
	return b, nil
}

// keys writes the key of every record of rec into s.keys.
func (b *binding) keys(rec arrow.RecordBatch, s *scratch) {
	dst := s.keys
	first := true
	for i := range b.terms {
		if i == b.aligned {
			continue
		}
		if first {
			b.eval(rec, i, dst, s)
			first = false
			continue
		}
		b.eval(rec, i, s.part, s)
		for j, p := range s.part {
			dst[j] = combine(dst[j], p)
		}
	}
	if b.aligned < 0 {
		return
	}
	b.eval(rec, b.aligned, s.part, s)
	if first {
		copy(dst, s.part)
		return
	}
	for j, p := range s.part {
		dst[j] = dst[j]<<32 | p&0xffffffff
	}
}

// eval computes term i for every record, nulls in enclosing structs
// included.
func (b *binding) eval(rec arrow.RecordBatch, i int, dst []uint64, s *scratch) {
	t := &b.terms[i]
	arr := rec.Column(t.path[0])
	for _, c := range t.path[1:] {
		arr = arr.(*array.Struct).Field(c)
	}
	t.fn(arr, dst, s.ints)
	// A null struct makes its fields null too, whatever they hold.
	arr = rec.Column(t.path[0])
	for _, c := range t.path[1:] {
		maskNulls(arr, dst, t.null)
		arr = arr.(*array.Struct).Field(c)
	}
}

// resolvePath finds a column by name or by a dotted path into struct
// columns. A name that itself contains dots wins over a nested path.
func resolvePath(s *arrow.Schema, path string) ([]int, arrow.DataType, error) {
	idx, dt, err := resolveIn(s.Fields(), path)
	if err != nil {
		names := make([]string, s.NumFields())
		for i, f := range s.Fields() {
			names[i] = f.Name
		}
		return nil, nil, fmt.Errorf("%w (the batch's columns: %s)", err, strings.Join(names, ", "))
	}
	return idx, dt, nil
}

func resolveIn(fields []arrow.Field, path string) ([]int, arrow.DataType, error) {
	for i, f := range fields {
		if f.Name == path {
			return []int{i}, f.Type, nil
		}
	}
	for dot := strings.IndexByte(path, '.'); dot >= 0; {
		head, rest := path[:dot], path[dot+1:]
		for i, f := range fields {
			if f.Name != head {
				continue
			}
			st, ok := f.Type.(*arrow.StructType)
			if !ok {
				return nil, nil, fmt.Errorf("column %q is %s, not a struct, so %q names nothing", head, f.Type, path)
			}
			idx, dt, err := resolveIn(st.Fields(), rest)
			if err != nil {
				names := make([]string, st.NumFields())
				for j, sf := range st.Fields() {
					names[j] = sf.Name
				}
				return nil, nil, fmt.Errorf("struct column %q has no field %q (its fields: %s)", head, rest, strings.Join(names, ", "))
			}
			return append([]int{i}, idx...), dt, nil
		}
		next := strings.IndexByte(path[dot+1:], '.')
		if next < 0 {
			break
		}
		dot += next + 1
	}
	return nil, nil, fmt.Errorf("no column %q", path)
}

// keyColumn returns the record key column of rec for a byKey binding, or
// nil when the batch has none.
func (b *binding) keyColumn(rec arrow.RecordBatch) arrow.Array {
	if b.keyCol < 0 {
		return nil
	}
	return rec.Column(b.keyCol)
}

// isTimeTerm reports whether a term is a time transform, whose partitions
// take turns being hot (today's day gets all of today's rows).
func isTimeTerm(t keyTerm) bool {
	switch t.tf.(type) {
	case iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform, iceberg.HourTransform:
		return true
	}
	return false
}
