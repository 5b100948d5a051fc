package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/hamba/avro/v2"
)

// DecodeError is returned by Decoder.Append and reported in BadRecord when
// a payload cannot be decoded. Path is the dotted path of the field that
// failed ("" when the payload as a whole is wrong, such as trailing bytes);
// Err says why and wraps ErrTruncated when the payload ended too early.
type DecodeError struct {
	Path string
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return "avro decode: " + e.Err.Error()
	}
	return "avro decode: field " + e.Path + ": " + e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// decodeFn reads one value of its node from d's reader and appends it to b.
type decodeFn func(d *Decoder, b array.Builder) error

// program is the compiled, immutable part of a Decoder; decoders made from
// the same program share it.
type program struct {
	schema *arrow.Schema
	fields []decodeFn
}

// Decoder decodes Avro binary payloads of one writer schema straight into
// Arrow builders, without an intermediate map or struct.
//
// A Decoder is not safe for concurrent use: it owns a reusable reader and
// scratch buffer. Use Clone to get another one that shares the compiled
// schema.
type Decoder struct {
	prog    *program
	r       *avro.Reader
	scratch []byte
	n       int           // length of the payload being decoded
	checked array.Builder // cols[0] of the last column set whose types were checked
}

// NewDecoder compiles the Avro record schema s into a Decoder. It fails for
// the same schemas ArrowSchema rejects.
func NewDecoder(s avro.Schema) (*Decoder, error) {
	root, err := planRecord(s)
	if err != nil {
		return nil, err
	}
	prog := &program{schema: root.schema(), fields: make([]decodeFn, len(root.children))}
	for i, c := range root.children {
		prog.fields[i] = compile(c)
	}
	return newDecoder(prog), nil
}

func newDecoder(prog *program) *Decoder {
	// Bytes and strings are read by readBytes, with its own length checks,
	// so the reader's MaxByteSliceSize never applies.
	return &Decoder{prog: prog, r: avro.NewReader(nil, 0)}
}

// Clone returns a new Decoder for the same schema that can be used
// concurrently with d.
func (d *Decoder) Clone() *Decoder { return newDecoder(d.prog) }

// Schema returns the Arrow schema of the value columns Append fills.
func (d *Decoder) Schema() *arrow.Schema { return d.prog.schema }

// Append decodes one Avro binary payload (without the Confluent header) and
// appends exactly one row to the first len(d.Schema().Fields()) builders of
// cols, which must have the types of d.Schema() in order (typically
// RecordBuilder.Fields() of a builder made from a schema that starts with
// d.Schema()'s fields; further builders, such as metadata columns, are left
// alone). Builders of the wrong type are an error.
//
// On error (truncated payload, trailing bytes, bad union or enum index,
// negative length, decimal overflow, malformed varint…) the builders may be
// left uneven: some columns got a value for this row, others did not, and
// nested builders may be inconsistent. The caller must then discard them
// and rebuild the batch without the payload (DecodeBatch does this). The
// error is a *DecodeError naming the field that failed. String contents are
// not checked for valid UTF-8.
//
// Append allocates nothing itself; the builders grow as needed. Reserving
// the expected batch size on them first (RecordBuilder.Reserve) saves the
// regrowth copies.
func (d *Decoder) Append(cols []array.Builder, payload []byte) error {
	fields := d.prog.fields
	if len(cols) < len(fields) {
		return fmt.Errorf("avro decode: got %d builders, the schema has %d value columns", len(cols), len(fields))
	}
	if len(fields) > 0 && cols[0] != d.checked {
		if err := d.checkBuilders(cols); err != nil {
			return err
		}
		d.checked = cols[0]
	}
	d.r.Reset(payload)
	d.r.Error = nil
	d.n = len(payload)
	for i, f := range fields {
		if err := f(d, cols[i]); err != nil {
			return err
		}
	}
	d.r.Peek()
	if d.r.Error == nil {
		return &DecodeError{Err: fmt.Errorf("trailing bytes after the record (payload is %d bytes): the payload does not match the schema", len(payload))}
	}
	return nil
}

func (d *Decoder) checkBuilders(cols []array.Builder) error {
	for i, f := range d.prog.schema.Fields() {
		if !arrow.TypeEqual(cols[i].Type(), f.Type) {
			return fmt.Errorf("avro decode: builder %d (%s) has type %s, want %s", i, f.Name, cols[i].Type(), f.Type)
		}
	}
	return nil
}

// fail builds the error for a failed read at path. It classifies the
// reader's sticky error when cause is nil.
func (d *Decoder) fail(path string, cause error) error {
	if cause == nil {
		cause = d.r.Error
		switch {
		case cause == nil:
			cause = errors.New("unknown read error")
		case errors.Is(cause, io.EOF), errors.Is(cause, io.ErrUnexpectedEOF):
			cause = fmt.Errorf("%w: payload ended before the record did (payload is %d bytes)", ErrTruncated, d.n)
		default:
			cause = fmt.Errorf("malformed data: %w", cause)
		}
	}
	return &DecodeError{Path: path, Err: cause}
}

// readN reads exactly n bytes into the scratch buffer. The slice is valid
// until the next read.
func (d *Decoder) readN(path string, n int) ([]byte, error) {
	if n > d.n {
		return nil, d.fail(path, fmt.Errorf("%w: needs %d bytes, payload is %d bytes", ErrTruncated, n, d.n))
	}
	if cap(d.scratch) < n {
		d.scratch = make([]byte, max(n, 2*cap(d.scratch), 64))
	}
	buf := d.scratch[:n]
	if n > 0 {
		d.r.Read(buf)
		if d.r.Error != nil {
			return nil, d.fail(path, nil)
		}
	}
	return buf, nil
}

// readBytes reads an Avro bytes or string value into the scratch buffer.
func (d *Decoder) readBytes(path string) ([]byte, error) {
	n := d.r.ReadLong()
	if d.r.Error != nil {
		return nil, d.fail(path, nil)
	}
	if n < 0 {
		return nil, d.fail(path, fmt.Errorf("negative length %d", n))
	}
	if n > int64(d.n) {
		return nil, d.fail(path, fmt.Errorf("%w: length %d is longer than the payload (%d bytes)", ErrTruncated, n, d.n))
	}
	return d.readN(path, int(n))
}

// readCount reads an array or map block header. minSize is the fewest bytes
// one item takes, used to reject counts the payload cannot hold.
func (d *Decoder) readCount(path string, minSize int) (int64, error) {
	count, _ := d.r.ReadBlockHeader()
	if d.r.Error != nil {
		return 0, d.fail(path, nil)
	}
	if count < 0 {
		return 0, d.fail(path, fmt.Errorf("negative block count %d", count))
	}
	limit := int64(d.n)
	if minSize > 0 {
		limit = int64(d.n / minSize)
	} else if limit < 1<<20 {
		limit = 1 << 20 // items that take no bytes (empty records)
	}
	if count > limit {
		return 0, d.fail(path, fmt.Errorf("%w: block of %d items cannot fit in a %d-byte payload", ErrTruncated, count, d.n))
	}
	return count, nil
}

// compile turns a planned node into its decode function.
func compile(n *node) decodeFn {
	path := n.path
	switch n.kind {
	case kBool:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadBool()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.BooleanBuilder).Append(v)
			return nil
		}
	case kInt:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadInt()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Int32Builder).Append(v)
			return nil
		}
	case kLong:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Int64Builder).Append(v)
			return nil
		}
	case kFloat:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadFloat()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Float32Builder).Append(v)
			return nil
		}
	case kDouble:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadDouble()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Float64Builder).Append(v)
			return nil
		}
	case kBytes:
		return func(d *Decoder, b array.Builder) error {
			v, err := d.readBytes(path)
			if err != nil {
				return err
			}
			b.(*array.BinaryBuilder).Append(v)
			return nil
		}
	case kString:
		return func(d *Decoder, b array.Builder) error {
			v, err := d.readBytes(path)
			if err != nil {
				return err
			}
			b.(*array.StringBuilder).BinaryBuilder.Append(v)
			return nil
		}
	case kFixed:
		size := n.size
		return func(d *Decoder, b array.Builder) error {
			v, err := d.readN(path, size)
			if err != nil {
				return err
			}
			b.(*array.FixedSizeBinaryBuilder).Append(v)
			return nil
		}
	case kEnum:
		symbols := n.symbols
		return func(d *Decoder, b array.Builder) error {
			i := d.r.ReadInt()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			if i < 0 || int(i) >= len(symbols) {
				return d.fail(path, fmt.Errorf("enum index %d out of range (the enum has %d symbols)", i, len(symbols)))
			}
			b.(*array.StringBuilder).Append(symbols[i])
			return nil
		}
	case kDecimalBytes, kDecimalFixed:
		size, prec, scale, fixed := n.size, n.prec, n.scale, n.kind == kDecimalFixed
		return func(d *Decoder, b array.Builder) error {
			var raw []byte
			var err error
			if fixed {
				raw, err = d.readN(path, size)
			} else {
				raw, err = d.readBytes(path)
			}
			if err != nil {
				return err
			}
			num, ok := decimalFromBytes(raw)
			if !ok || !num.FitsInPrecision(prec) {
				return d.fail(path, fmt.Errorf("decimal overflow: the %d-byte unscaled value does not fit decimal(%d,%d)", len(raw), prec, scale))
			}
			b.(*array.Decimal128Builder).Append(num)
			return nil
		}
	case kUUIDString:
		return func(d *Decoder, b array.Builder) error {
			v, err := d.readBytes(path)
			if err != nil {
				return err
			}
			u, ok := parseUUID(v)
			if !ok {
				return d.fail(path, fmt.Errorf("invalid uuid %q: want the 36-character form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", truncateForError(v)))
			}
			appendUUID(b, u[:])
			return nil
		}
	case kUUIDFixed:
		return func(d *Decoder, b array.Builder) error {
			v, err := d.readN(path, 16)
			if err != nil {
				return err
			}
			appendUUID(b, v)
			return nil
		}
	case kDate:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadInt()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Date32Builder).Append(arrow.Date32(v))
			return nil
		}
	case kTimeMillis:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadInt()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Time64Builder).Append(arrow.Time64(int64(v) * 1000))
			return nil
		}
	case kTimeMicros:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.Time64Builder).Append(arrow.Time64(v))
			return nil
		}
	case kTimestampMillis:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			if v > maxMillis || v < -maxMillis {
				return d.fail(path, fmt.Errorf("timestamp %d ms is out of the microsecond range", v))
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(v * 1000))
			return nil
		}
	case kTimestampMicros:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
			return nil
		}
	case kTimestampNanos:
		return func(d *Decoder, b array.Builder) error {
			v := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(floorDiv(v, 1000)))
			return nil
		}
	case kDuration:
		return func(d *Decoder, b array.Builder) error {
			v, err := d.readN(path, 12)
			if err != nil {
				return err
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for i := 0; i < 3; i++ {
				u := binary.LittleEndian.Uint32(v[4*i:])
				if u > math.MaxInt32 {
					return d.fail(path, fmt.Errorf("duration %s = %d does not fit a signed 32-bit column", [...]string{"months", "days", "millis"}[i], u))
				}
				sb.FieldBuilder(i).(*array.Int32Builder).Append(int32(u))
			}
			return nil
		}
	case kRecord:
		fields := make([]decodeFn, len(n.children))
		for i, c := range n.children {
			fields[i] = compile(c)
		}
		return func(d *Decoder, b array.Builder) error {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for i, f := range fields {
				if err := f(d, sb.FieldBuilder(i)); err != nil {
					return err
				}
			}
			return nil
		}
	case kArray:
		item, minSize := compile(n.children[0]), n.children[0].minSize
		return func(d *Decoder, b array.Builder) error {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			vb := lb.ValueBuilder()
			for {
				count, err := d.readCount(path, minSize)
				if err != nil {
					return err
				}
				if count == 0 {
					return nil
				}
				for ; count > 0; count-- {
					if err := item(d, vb); err != nil {
						return err
					}
				}
			}
		}
	case kMap:
		val, minSize := compile(n.children[0]), 1+n.children[0].minSize
		return func(d *Decoder, b array.Builder) error {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			kb := mb.KeyBuilder().(*array.StringBuilder)
			ib := mb.ItemBuilder()
			for {
				count, err := d.readCount(path, minSize)
				if err != nil {
					return err
				}
				if count == 0 {
					return nil
				}
				for ; count > 0; count-- {
					k, err := d.readBytes(path + ".key")
					if err != nil {
						return err
					}
					kb.BinaryBuilder.Append(k)
					if err := val(d, ib); err != nil {
						return err
					}
				}
			}
		}
	case kOptional:
		inner, nullIndex, valueIndex := compile(n.children[0]), n.nullIndex, n.valueIndex
		branches := int64(1)
		if nullIndex >= 0 {
			branches = 2
		}
		return func(d *Decoder, b array.Builder) error {
			i := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			switch i {
			case valueIndex:
				return inner(d, b)
			case nullIndex:
				b.AppendNull()
				return nil
			}
			return d.fail(path, fmt.Errorf("union index %d out of range (the union has %d branches)", i, branches))
		}
	case kUnion:
		branches := make([]decodeFn, len(n.children))
		for i, c := range n.children {
			branches[i] = compile(c)
		}
		nullIndex, branchCol := n.nullIndex, n.branchCol
		return func(d *Decoder, b array.Builder) error {
			i := d.r.ReadLong()
			if d.r.Error != nil {
				return d.fail(path, nil)
			}
			if i < 0 || i >= int64(len(branchCol)) {
				return d.fail(path, fmt.Errorf("union index %d out of range (the union has %d branches)", i, len(branchCol)))
			}
			sb := b.(*array.StructBuilder)
			if i == nullIndex {
				sb.AppendNull()
				return nil
			}
			col := branchCol[i]
			sb.Append(true)
			for j, dec := range branches {
				if j == col {
					if err := dec(d, sb.FieldBuilder(j)); err != nil {
						return err
					}
				} else {
					sb.FieldBuilder(j).AppendNull()
				}
			}
			return nil
		}
	}
	panic(fmt.Sprintf("schemas: no decoder for node kind %d at %s", n.kind, path))
}

// maxMillis bounds a millisecond value that can be scaled to microseconds
// without overflowing int64.
const maxMillis = math.MaxInt64 / 1000

// floorDiv divides rounding toward negative infinity, as iceberg-go does
// when it truncates nanoseconds to microseconds.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// decimalFromBytes reads a big-endian two's-complement unscaled value.
func decimalFromBytes(b []byte) (decimal128.Num, bool) {
	if len(b) == 0 {
		return decimal128.Num{}, true
	}
	neg := b[0]&0x80 != 0
	if len(b) > 16 {
		ext := byte(0)
		if neg {
			ext = 0xff
		}
		for _, c := range b[:len(b)-16] {
			if c != ext {
				return decimal128.Num{}, false
			}
		}
		b = b[len(b)-16:]
		if (b[0]&0x80 != 0) != neg {
			return decimal128.Num{}, false
		}
	}
	var buf [16]byte
	if neg {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])), true
}

// uuidHexPos are the offsets of the 16 hex pairs in a canonical UUID.
var uuidHexPos = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexVal maps an ASCII hex digit to its value and everything else to 0xff.
// It is never written after initialisation.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
		t[c-'a'+'A'] = byte(c-'a') + 10
	}
	return t
}()

// parseUUID parses the canonical 36-character text form of a UUID.
func parseUUID(s []byte) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	var bad byte
	for i, p := range uuidHexPos {
		hi, lo := hexVal[s[p]], hexVal[s[p+1]]
		bad |= hi | lo
		u[i] = hi<<4 | lo
	}
	return u, bad&0xf0 == 0
}

func appendUUID(b array.Builder, v []byte) {
	switch ub := b.(type) {
	case *extensions.UUIDBuilder:
		ub.ExtensionBuilder.Builder.(*array.FixedSizeBinaryBuilder).Append(v)
	case *array.ExtensionBuilder:
		ub.Builder.(*array.FixedSizeBinaryBuilder).Append(v)
	default:
		panic(fmt.Sprintf("schemas: uuid column has builder %T", b))
	}
}

func truncateForError(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
