package generate

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"
)

// gen is one compiled value: the same logical value written two ways. Both
// closures draw from the record's stream in exactly the same order, so the
// Arrow row and the Avro bytes of a record always agree. Leaves make their
// value with one shared closure and only the writing differs.
type gen struct {
	arrow func(s *state, b array.Builder)
	avro  func(s *state, dst []byte) []byte
	// size says how much a value takes in its builder, on average, so
	// Reserve can size a batch's buffers up front; nil is a plain value.
	size *sizing
}

// compiler turns an Avro schema and its Arrow mapping into gens.
type compiler struct {
	keyField string
	keyCard  uint64
	// keyText appends the key of a rank as __key bytes; set when the key
	// field is compiled.
	keyText func(dst []byte, rank uint64) []byte
}

// Defaults for values without hints.
const (
	defaultIntMax    = 1000
	defaultLongMax   = 1_000_000_000
	defaultDoubleMax = 1000
	defaultNull      = 0.1
	defaultArrayMax  = 5
	defaultMapMax    = 3
	defaultNumberMax = 999_999
)

var defaultMapKeys = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}

func (c *compiler) compile(path string, s avro.Schema, dt arrow.DataType, h hints) (gen, error) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if ext, ok := dt.(arrow.ExtensionType); ok {
		inner, err := c.compile(path, s, ext.StorageType(), h)
		if err != nil {
			return gen{}, err
		}
		in := inner.arrow
		return gen{
			size:  inner.size,
			arrow: func(st *state, b array.Builder) { in(st, b.(storageBuilder).StorageBuilder()) },
			avro:  inner.avro,
		}, nil
	}
	if path == c.keyField {
		return c.key(path, s, dt, h)
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		return c.record(path, s, dt)
	case *avro.UnionSchema:
		return c.union(path, s, dt, h, false)
	case *avro.ArraySchema:
		return c.array(path, s, dt, h)
	case *avro.MapSchema:
		return c.mapOf(path, s, dt, h)
	case *avro.EnumSchema:
		return c.enum(path, s, dt)
	case *avro.FixedSchema:
		return c.fixed(path, s, dt, h)
	case *avro.PrimitiveSchema:
		return c.primitive(path, s, dt, h)
	case *avro.NullSchema:
		return gen{
			arrow: func(_ *state, b array.Builder) { b.AppendNull() },
			avro:  func(_ *state, dst []byte) []byte { return dst },
		}, nil
	}
	return gen{}, fmt.Errorf("field %s: unsupported Avro type %s", path, s.Type())
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fields compiles a record's fields against the Arrow fields, which
// schemas.ArrowSchema gives in the same order and with the same names.
func (c *compiler) fields(path string, s *avro.RecordSchema, afields []arrow.Field) ([]gen, error) {
	if len(afields) != len(s.Fields()) {
		return nil, fmt.Errorf("record %s: %d Avro fields but %d Arrow columns", orRoot(path), len(s.Fields()), len(afields))
	}
	gens := make([]gen, len(s.Fields()))
	for i, f := range s.Fields() {
		fp := join(path, f.Name())
		if afields[i].Name != f.Name() {
			return nil, fmt.Errorf("field %s: Arrow column %d is %q", fp, i, afields[i].Name)
		}
		h, err := readHints(fp, typeProps(f.Type()), f)
		if err != nil {
			return nil, err
		}
		if gens[i], err = c.compile(fp, f.Type(), afields[i].Type, h); err != nil {
			return nil, err
		}
	}
	return gens, nil
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// typeProps returns what carries a type's own properties (a union has
// none; a named reference has its target's).
func typeProps(s avro.Schema) any {
	if ref, ok := s.(*avro.RefSchema); ok {
		return ref.Schema()
	}
	return s
}

func (c *compiler) record(path string, s *avro.RecordSchema, dt arrow.DataType) (gen, error) {
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return gen{}, fmt.Errorf("field %s: record maps to Arrow %s, want a struct", path, dt)
	}
	gens, err := c.fields(path, s, st.Fields())
	if err != nil {
		return gen{}, err
	}
	sized := make([]*sizing, len(gens))
	arrows := make([]func(*state, array.Builder), len(gens))
	for i := range gens {
		sized[i], arrows[i] = gens[i].size, gens[i].arrow
	}
	return gen{
		size: &sizing{children: sized},
		arrow: func(s *state, b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for i, f := range arrows {
				f(s, sb.FieldBuilder(i))
			}
		},
		avro: func(s *state, dst []byte) []byte {
			for i := range gens {
				dst = gens[i].avro(s, dst)
			}
			return dst
		},
	}, nil
}

// union compiles a nullable union (["null", T] in either order). Unions of
// several non-null types are not generated.
func (c *compiler) union(path string, s *avro.UnionSchema, dt arrow.DataType, h hints, never bool) (gen, error) {
	if !s.Nullable() {
		return gen{}, fmt.Errorf("field %s: union %s: only [\"null\", T] unions can be generated", path, s)
	}
	if !never && strings.HasPrefix(c.keyField, path+".") {
		return gen{}, fmt.Errorf("%w %s: it is inside %s, which may be null; a key must be in every record", ErrKeyField, c.keyField, path)
	}
	nullIdx, typIdx := s.Indices()
	inner := s.Types()[typIdx]
	// The field's hints reach the non-null type, under the type's own.
	ih, err := readHints(path, typeProps(inner))
	if err != nil {
		return gen{}, err
	}
	ih = overlay(ih, h)
	var g gen
	if never {
		g, err = c.key(path, inner, dt, ih)
	} else {
		g, err = c.compile(path, inner, dt, ih)
	}
	if err != nil {
		return gen{}, err
	}
	p := defaultNull
	if h.hasNull {
		p = h.null
	}
	if never || p == 0 {
		n := int64(typIdx)
		in := g.avro
		return gen{
			size:  g.size,
			arrow: g.arrow,
			avro:  func(s *state, dst []byte) []byte { return in(s, appendLong(dst, n)) },
		}, nil
	}
	ia, iv := g.arrow, g.avro
	ni, ti := int64(nullIdx), int64(typIdx)
	return gen{
		size: g.size,
		arrow: func(s *state, b array.Builder) {
			if s.float() < p {
				b.AppendNull()
				return
			}
			ia(s, b)
		},
		avro: func(s *state, dst []byte) []byte {
			if s.float() < p {
				return appendLong(dst, ni)
			}
			return iv(s, appendLong(dst, ti))
		},
	}, nil
}

// overlay returns base with every hint set in top applied over it.
func overlay(base, top hints) hints {
	if top.hasMin {
		base.min, base.hasMin = top.min, true
	}
	if top.hasMax {
		base.max, base.hasMax = top.max, true
	}
	if top.hasNull {
		base.null, base.hasNull = top.null, true
	}
	if top.values != nil {
		base.values = top.values
	}
	if top.keys != nil {
		base.keys = top.keys
	}
	if top.hasPrefix {
		base.prefix, base.suffix, base.hasPrefix = top.prefix, top.suffix, true
	}
	if top.kind != "" {
		base.kind = top.kind
	}
	return base
}

func (c *compiler) array(path string, s *avro.ArraySchema, dt arrow.DataType, h hints) (gen, error) {
	lt, ok := dt.(*arrow.ListType)
	if !ok {
		return gen{}, fmt.Errorf("field %s: array maps to Arrow %s, want a list", path, dt)
	}
	elem := lt.Elem()
	ih, err := readHints(path+"[]", typeProps(s.Items()))
	if err != nil {
		return gen{}, err
	}
	item, err := c.compile(path+"[]", s.Items(), elem, ih)
	if err != nil {
		return gen{}, err
	}
	lo, hi := h.intRange(0, defaultArrayMax)
	if lo < 0 {
		return gen{}, fmt.Errorf("field %s: %s must not be negative", path, PropMin)
	}
	ia, iv := item.arrow, item.avro
	return gen{
		size: &sizing{per: float64(lo+hi) / 2, children: []*sizing{item.size}},
		arrow: func(s *state, b array.Builder) {
			lb := b.(*array.ListBuilder)
			n := s.between(lo, hi)
			lb.Append(true)
			vb := lb.ValueBuilder()
			for range n {
				ia(s, vb)
			}
		},
		avro: func(s *state, dst []byte) []byte {
			n := s.between(lo, hi)
			if n > 0 {
				dst = appendLong(dst, n)
				for range n {
					dst = iv(s, dst)
				}
			}
			return append(dst, 0)
		},
	}, nil
}

func (c *compiler) mapOf(path string, s *avro.MapSchema, dt arrow.DataType, h hints) (gen, error) {
	mt, ok := dt.(*arrow.MapType)
	if !ok {
		return gen{}, fmt.Errorf("field %s: map maps to Arrow %s, want a map", path, dt)
	}
	writeKey, err := bytesWriter(mt.KeyType())
	if err != nil {
		return gen{}, fmt.Errorf("field %s: map key: %w", path, err)
	}
	vh, err := readHints(path+"{}", typeProps(s.Values()))
	if err != nil {
		return gen{}, err
	}
	val, err := c.compile(path+"{}", s.Values(), mt.ItemType(), vh)
	if err != nil {
		return gen{}, err
	}
	keys := h.keys
	if keys == nil {
		keys = defaultMapKeys
	}
	kb := make([][]byte, len(keys))
	for i, k := range keys {
		kb[i] = []byte(k)
	}
	lo, hi := h.intRange(0, defaultMapMax)
	if lo < 0 {
		return gen{}, fmt.Errorf("field %s: %s must not be negative", path, PropMin)
	}
	// Keys are distinct within a map: a random start, then consecutive
	// keys of the list.
	hi = min(hi, int64(len(kb)))
	lo = min(lo, hi)
	nk := uint64(len(kb))
	va, vv := val.arrow, val.avro
	return gen{
		size: &sizing{per: float64(lo+hi) / 2, children: []*sizing{{bytes: meanLen(keys)}, val.size}},
		arrow: func(s *state, b array.Builder) {
			mb := b.(*array.MapBuilder)
			n := s.between(lo, hi)
			start := s.intn(nk)
			mb.Append(true)
			kbld, ibld := mb.KeyBuilder(), mb.ItemBuilder()
			for i := range uint64(n) {
				writeKey(kbld, kb[(start+i)%nk])
				va(s, ibld)
			}
		},
		avro: func(s *state, dst []byte) []byte {
			n := s.between(lo, hi)
			start := s.intn(nk)
			if n > 0 {
				dst = appendLong(dst, n)
				for i := range uint64(n) {
					dst = appendBytes(dst, kb[(start+i)%nk])
					dst = vv(s, dst)
				}
			}
			return append(dst, 0)
		},
	}, nil
}

func (c *compiler) enum(path string, s *avro.EnumSchema, dt arrow.DataType) (gen, error) {
	syms := make([][]byte, len(s.Symbols()))
	for i, sym := range s.Symbols() {
		syms[i] = []byte(sym)
	}
	n := uint64(len(syms))
	arrowFn, err := bytesArrow(dt, func(s *state) []byte { return syms[s.intn(n)] })
	if err != nil {
		return gen{}, fmt.Errorf("field %s: enum: %w", path, err)
	}
	return gen{
		size:  &sizing{bytes: meanLen(s.Symbols())},
		arrow: arrowFn,
		avro:  func(s *state, dst []byte) []byte { return appendLong(dst, int64(s.intn(n))) },
	}, nil
}

func (c *compiler) fixed(path string, s *avro.FixedSchema, dt arrow.DataType, h hints) (gen, error) {
	if l := s.Logical(); l != nil && l.Type() == avro.Decimal {
		return c.decimal(path, l.(*avro.DecimalLogicalSchema), s.Size(), dt, h)
	}
	if fs, ok := dt.(*arrow.FixedSizeBinaryType); ok && fs.ByteWidth != s.Size() {
		return gen{}, fmt.Errorf("field %s: fixed(%d) maps to Arrow %s", path, s.Size(), dt)
	}
	size := s.Size()
	val := func(s *state) []byte { return s.randomBytes(size) }
	arrowFn, err := bytesArrow(dt, val)
	if err != nil {
		return gen{}, fmt.Errorf("field %s: %w", path, err)
	}
	return gen{
		size:  &sizing{bytes: float64(size)},
		arrow: arrowFn,
		avro:  func(s *state, dst []byte) []byte { return append(dst, val(s)...) },
	}, nil
}

func (c *compiler) decimal(path string, l *avro.DecimalLogicalSchema, fixedSize int, dt arrow.DataType, h hints) (gen, error) {
	limit := int64(math.MaxInt64)
	if l.Precision() < 19 {
		limit = int64(math.Pow10(l.Precision())) - 1
	}
	lo, hi := h.intRange(0, min(limit, 100_000_000))
	if hi > limit || lo < -limit {
		return gen{}, fmt.Errorf("field %s: decimal(%d,%d) cannot hold unscaled values in [%d, %d]", path, l.Precision(), l.Scale(), lo, hi)
	}
	if fixedSize > 0 && fixedSize < 8 {
		if w := max(decimalWidth(lo), decimalWidth(hi)); w > fixedSize {
			return gen{}, fmt.Errorf("field %s: fixed(%d) decimal cannot hold unscaled values in [%d, %d]", path, fixedSize, lo, hi)
		}
	}
	arrowFn, err := decimalArrow(dt, func(s *state) int64 { return s.between(lo, hi) })
	if err != nil {
		return gen{}, fmt.Errorf("field %s: %w", path, err)
	}
	return gen{
		arrow: arrowFn,
		avro: func(s *state, dst []byte) []byte {
			v := s.between(lo, hi)
			if fixedSize > 0 {
				return appendDecimal(dst, v, fixedSize)
			}
			w := decimalWidth(v)
			return appendDecimal(appendLong(dst, int64(w)), v, w)
		},
	}, nil
}

// Logical types hamba/avro leaves unparsed (a logicalType property).
const (
	timestampNanos      avro.LogicalType = "timestamp-nanos"
	localTimestampNanos avro.LogicalType = "local-timestamp-nanos"
)

// logicalOf returns a primitive's logical type, or "".
func logicalOf(s *avro.PrimitiveSchema) avro.LogicalType {
	if l := s.Logical(); l != nil {
		return l.Type()
	}
	if lt, ok := s.Prop("logicalType").(string); ok {
		return avro.LogicalType(lt)
	}
	return ""
}

func (c *compiler) primitive(path string, s *avro.PrimitiveSchema, dt arrow.DataType, h hints) (gen, error) {
	lt := logicalOf(s)
	switch s.Type() {
	case avro.Boolean:
		if _, ok := dt.(*arrow.BooleanType); !ok {
			return gen{}, fmt.Errorf("field %s: boolean maps to Arrow %s", path, dt)
		}
		return gen{
			arrow: func(s *state, b array.Builder) { b.(*array.BooleanBuilder).Append(s.next()&1 == 1) },
			avro:  func(s *state, dst []byte) []byte { return appendBool(dst, s.next()&1 == 1) },
		}, nil
	case avro.Float, avro.Double:
		lo, hi := h.floatRange(0, defaultDoubleMax)
		val := func(s *state) float64 { return lo + s.float()*(hi-lo) }
		if s.Type() == avro.Float {
			val = func(s *state) float64 { return float64(float32(lo + s.float()*(hi-lo))) }
		}
		var arrowFn func(s *state, b array.Builder)
		switch dt.(type) {
		case *arrow.Float64Type:
			arrowFn = func(s *state, b array.Builder) { b.(*array.Float64Builder).Append(val(s)) }
		case *arrow.Float32Type:
			arrowFn = func(s *state, b array.Builder) { b.(*array.Float32Builder).Append(float32(val(s))) }
		default:
			return gen{}, fmt.Errorf("field %s: %s maps to Arrow %s", path, s.Type(), dt)
		}
		enc := appendDouble
		if s.Type() == avro.Float {
			enc = func(dst []byte, v float64) []byte { return appendFloat(dst, float32(v)) }
		}
		return gen{
			arrow: arrowFn,
			avro:  func(s *state, dst []byte) []byte { return enc(dst, val(s)) },
		}, nil
	case avro.Int, avro.Long:
		if lt == avro.Decimal {
			break
		}
		val, u, err := c.integer(path, s.Type(), lt, h)
		if err != nil {
			return gen{}, err
		}
		arrowFn, err := intArrow(dt, u, val)
		if err != nil {
			return gen{}, fmt.Errorf("field %s: %w", path, err)
		}
		return gen{
			arrow: arrowFn,
			avro:  func(s *state, dst []byte) []byte { return appendLong(dst, val(s)) },
		}, nil
	case avro.Bytes:
		if lt == avro.Decimal {
			return c.decimal(path, s.Logical().(*avro.DecimalLogicalSchema), 0, dt, h)
		}
		lo, hi := h.intRange(4, 16)
		if lo < 0 {
			return gen{}, fmt.Errorf("field %s: %s must not be negative", path, PropMin)
		}
		val := func(s *state) []byte { return s.randomBytes(int(s.between(lo, hi))) }
		arrowFn, err := bytesArrow(dt, val)
		if err != nil {
			return gen{}, fmt.Errorf("field %s: %w", path, err)
		}
		return gen{
			size:  &sizing{bytes: float64(lo+hi) / 2},
			arrow: arrowFn,
			avro:  func(s *state, dst []byte) []byte { return appendBytes(dst, val(s)) },
		}, nil
	case avro.String:
		if lt == avro.UUID || h.kind == "uuid" {
			return uuidGen(path, dt, func(s *state) [16]byte { return newUUID(s.next(), s.next()) })
		}
		text, textLen, err := c.text(path, h)
		if err != nil {
			return gen{}, err
		}
		arrowFn, err := bytesArrow(dt, text)
		if err != nil {
			return gen{}, fmt.Errorf("field %s: %w", path, err)
		}
		return gen{
			size:  &sizing{bytes: textLen},
			arrow: arrowFn,
			avro:  func(s *state, dst []byte) []byte { return appendBytes(dst, text(s)) },
		}, nil
	}
	return gen{}, fmt.Errorf("field %s: unsupported Avro type %s", path, s.Type())
}

// integer returns the value closure of an int or long, and its unit.
func (c *compiler) integer(path string, t avro.Type, lt avro.LogicalType, h hints) (func(*state) int64, unit, error) {
	switch lt {
	case avro.TimestampMicros, avro.LocalTimestampMicros, avro.TimestampMillis, avro.LocalTimestampMillis,
		timestampNanos, localTimestampNanos, avro.Date, avro.TimeMillis, avro.TimeMicros:
		// Event time plus an offset in milliseconds from the hints.
		lo, hi := h.intRange(0, 0)
		lo, hi = lo*1000, hi*1000
		event := func(s *state) int64 { return s.eventMicros + s.between(lo, hi) }
		switch lt {
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return event, micros, nil
		case avro.TimestampMillis, avro.LocalTimestampMillis:
			return func(s *state) int64 { return floorDiv(event(s), 1000) }, millis, nil
		case timestampNanos, localTimestampNanos:
			return func(s *state) int64 { return event(s) * 1000 }, nanos, nil
		case avro.Date:
			return func(s *state) int64 { return floorDiv(event(s), 86400e6) }, days, nil
		case avro.TimeMillis:
			return func(s *state) int64 { return floorMod(event(s), 86400e6) / 1000 }, millis, nil
		default:
			return func(s *state) int64 { return floorMod(event(s), 86400e6) }, micros, nil
		}
	case "":
	default:
		return nil, 0, fmt.Errorf("field %s: logical type %s on %s is not supported", path, lt, t)
	}
	maxV := int64(defaultLongMax)
	if t == avro.Int {
		maxV = defaultIntMax
	}
	lo, hi := h.intRange(0, maxV)
	if t == avro.Int && (lo < math.MinInt32 || hi > math.MaxInt32) {
		return nil, 0, fmt.Errorf("field %s: range [%d, %d] does not fit an Avro int", path, lo, hi)
	}
	return func(s *state) int64 { return s.between(lo, hi) }, plain, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// text returns the value closure of a string. The slice it returns is
// valid until the next value is generated.
func (c *compiler) text(path string, h hints) (func(*state) []byte, float64, error) {
	switch {
	case h.values != nil:
		vals := make([][]byte, len(h.values))
		for i, v := range h.values {
			vals[i] = []byte(v)
		}
		n := uint64(len(vals))
		return func(s *state) []byte { return vals[s.intn(n)] }, meanLen(h.values), nil
	case h.kind == "ipv4":
		return func(s *state) []byte {
			x := s.next()
			b := s.scratch[:0]
			for i := range 4 {
				if i > 0 {
					b = append(b, '.')
				}
				b = strconv.AppendUint(b, x>>(8*uint(i))&0xff, 10)
			}
			s.scratch = b
			return b
		}, 13, nil
	case h.hasPrefix:
		lo, hi := h.intRange(0, defaultNumberMax)
		prefix, suffix := []byte(h.prefix), []byte(h.suffix)
		mean := float64(len(prefix)+len(suffix)) + digits(hi)
		if len(suffix) == 0 {
			return func(s *state) []byte {
				s.scratch = strconv.AppendInt(append(s.scratch[:0], prefix...), s.between(lo, hi), 10)
				return s.scratch
			}, mean, nil
		}
		return func(s *state) []byte {
			b := strconv.AppendInt(append(s.scratch[:0], prefix...), s.between(lo, hi), 10)
			s.scratch = append(b, suffix...)
			return s.scratch
		}, mean, nil
	}
	lo, hi := h.intRange(5, 12)
	if lo < 0 {
		return nil, 0, fmt.Errorf("field %s: %s must not be negative", path, PropMin)
	}
	return func(s *state) []byte {
		n := int(s.between(lo, hi))
		// Eight letters per draw, low byte first.
		b := slices.Grow(s.scratch[:0], n)[:n]
		i := 0
		for ; i+8 <= n; i += 8 {
			x, c := s.next(), b[i:i+8:i+8]
			c[0], c[1], c[2], c[3] = letterOf[byte(x)], letterOf[byte(x>>8)], letterOf[byte(x>>16)], letterOf[byte(x>>24)]
			c[4], c[5], c[6], c[7] = letterOf[byte(x>>32)], letterOf[byte(x>>40)], letterOf[byte(x>>48)], letterOf[byte(x>>56)]
		}
		if i < n {
			x := s.next()
			for ; i < n; i++ {
				b[i] = letterOf[byte(x)]
				x >>= 8
			}
		}
		s.scratch = b
		return b
	}, float64(lo+hi) / 2, nil
}

// letterOf maps a random byte to the letter 'a'+byte%26. A table and
// whole words (above) because this loop was half the time of generating the
// benchmark's event, whose comment is 100-130 letters.
var letterOf = func() (t [256]byte) {
	for i := range t {
		t[i] = 'a' + byte(i%26)
	}
	return t
}()

// randomBytes returns n random bytes in the scratch buffer.
func (s *state) randomBytes(n int) []byte {
	b := s.scratch[:0]
	for len(b) < n {
		x := s.next()
		for i := 0; i < 8 && len(b) < n; i++ {
			b = append(b, byte(x))
			x >>= 8
		}
	}
	s.scratch = b
	return b
}

// newUUID makes a version-4 UUID from 128 random bits.
func newUUID(hi, lo uint64) (u [16]byte) {
	binary.BigEndian.PutUint64(u[:8], hi)
	binary.BigEndian.PutUint64(u[8:], lo)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// appendUUID appends u in its 36-character text form.
func appendUUID(dst []byte, u [16]byte) []byte {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:])
	return append(dst, buf[:]...)
}

// uuidGen writes a UUID as text, or as 16 raw bytes into a fixed-size
// binary column (Arrow's uuid extension type stores it so).
func uuidGen(path string, dt arrow.DataType, val func(*state) [16]byte) (gen, error) {
	text := func(s *state) []byte {
		s.scratch = appendUUID(s.scratch[:0], val(s))
		return s.scratch
	}
	g := gen{
		size: &sizing{bytes: 36},
		avro: func(s *state, dst []byte) []byte { return appendBytes(dst, text(s)) },
	}
	arrowVal := text
	if fs, ok := dt.(*arrow.FixedSizeBinaryType); ok {
		if fs.ByteWidth != 16 {
			return gen{}, fmt.Errorf("field %s: uuid maps to Arrow %s, want 16 bytes", path, dt)
		}
		g.size = nil
		arrowVal = func(s *state) []byte {
			u := val(s)
			// Through the scratch buffer: u[:] handed on would move u
			// to the heap on every record.
			s.scratch = append(s.scratch[:0], u[:]...)
			return s.scratch
		}
	}
	var err error
	if g.arrow, err = bytesArrow(dt, arrowVal); err != nil {
		return gen{}, fmt.Errorf("field %s: uuid: %w", path, err)
	}
	return g, nil
}

// key compiles the key field: its value comes from the record's key rank,
// not from the field stream, and is never null.
func (c *compiler) key(path string, s avro.Schema, dt arrow.DataType, h hints) (gen, error) {
	if u, ok := s.(*avro.UnionSchema); ok {
		return c.union(path, u, dt, h, true)
	}
	p, ok := s.(*avro.PrimitiveSchema)
	if !ok {
		return gen{}, fmt.Errorf("%w %s: type %s cannot be a key (want int, long or string)", ErrKeyField, path, s.Type())
	}
	lt := logicalOf(p)
	switch {
	case (p.Type() == avro.Int || p.Type() == avro.Long) && lt == "":
		lo, _ := h.intRange(1, 0)
		if p.Type() == avro.Int && lo+int64(c.keyCard)-1 > math.MaxInt32 {
			return gen{}, fmt.Errorf("%w %s: %d keys from %d do not fit an Avro int", ErrKeyField, path, c.keyCard, lo)
		}
		arrowFn, err := intArrow(dt, plain, func(s *state) int64 { return lo + int64(s.keyRank) })
		if err != nil {
			return gen{}, fmt.Errorf("%w %s: %w", ErrKeyField, path, err)
		}
		c.keyText = func(dst []byte, rank uint64) []byte { return strconv.AppendInt(dst, lo+int64(rank), 10) }
		return gen{
			arrow: arrowFn,
			avro:  func(s *state, dst []byte) []byte { return appendLong(dst, lo+int64(s.keyRank)) },
		}, nil
	case p.Type() == avro.String && (lt == avro.UUID || h.kind == "uuid"):
		// The rank's UUID: a hash of the rank, so keys look random.
		keyUUID := func(rank uint64) [16]byte { return newUUID(mix64(rank^keySalt), mix64(rank+golden)) }
		c.keyText = func(dst []byte, rank uint64) []byte { return appendUUID(dst, keyUUID(rank)) }
		return uuidGen(path, dt, func(s *state) [16]byte { return keyUUID(s.keyRank) })
	case p.Type() == avro.String && lt == "":
		lo, _ := h.intRange(0, 0)
		prefix, suffix := []byte(h.prefix), []byte(h.suffix)
		c.keyText = func(dst []byte, rank uint64) []byte {
			return append(strconv.AppendInt(append(dst, prefix...), lo+int64(rank), 10), suffix...)
		}
		keyText := c.keyText
		text := func(s *state) []byte {
			s.scratch = keyText(s.scratch[:0], s.keyRank)
			return s.scratch
		}
		arrowFn, err := bytesArrow(dt, text)
		if err != nil {
			return gen{}, fmt.Errorf("%w %s: %w", ErrKeyField, path, err)
		}
		return gen{
			size:  &sizing{bytes: float64(len(prefix)+len(suffix)) + digits(lo+int64(c.keyCard))},
			arrow: arrowFn,
			avro:  func(s *state, dst []byte) []byte { return appendBytes(dst, text(s)) },
		}, nil
	}
	return gen{}, fmt.Errorf("%w %s: type %s cannot be a key (want int, long or string)", ErrKeyField, path, describe(p))
}

func describe(p *avro.PrimitiveSchema) string {
	if lt := logicalOf(p); lt != "" {
		return fmt.Sprintf("%s (%s)", p.Type(), lt)
	}
	return string(p.Type())
}
