package schemas

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
)

const allTypesSchema = `{"type":"record","name":"All","namespace":"floe.test","fields":[
	{"name":"b","type":"boolean"},
	{"name":"i","type":"int"},
	{"name":"l","type":"long"},
	{"name":"f","type":"float"},
	{"name":"d","type":"double"},
	{"name":"by","type":"bytes"},
	{"name":"s","type":"string"},
	{"name":"fx","type":{"type":"fixed","name":"F3","size":3}},
	{"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}},
	{"name":"decb","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	{"name":"decf","type":{"type":"fixed","name":"D8","size":8,"logicalType":"decimal","precision":18,"scale":3}},
	{"name":"u","type":{"type":"string","logicalType":"uuid"}},
	{"name":"uf","type":{"type":"fixed","name":"U16","size":16,"logicalType":"uuid"}},
	{"name":"date","type":{"type":"int","logicalType":"date"}},
	{"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
	{"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
	{"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},
	{"name":"tsns","type":{"type":"long","logicalType":"timestamp-nanos"}},
	{"name":"ltsms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
	{"name":"dur","type":{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}},
	{"name":"arr","type":{"type":"array","items":["null","long"]}},
	{"name":"m","type":{"type":"map","values":"string"}},
	{"name":"rec","type":{"type":"record","name":"Addr","fields":[{"name":"zip","type":"string"},{"name":"n","type":["null","int"]}]}},
	{"name":"orec","type":["null","Addr"]},
	{"name":"uni","type":["null","int","string"]}
]}`

func allTypesRow(n int) map[string]any {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	row := map[string]any{
		"b":     n%2 == 0,
		"i":     int(-7 * n),
		"l":     int64(1) << 40 * int64(n+1),
		"f":     float32(n) + 0.5,
		"d":     float64(n) * 1.25,
		"by":    []byte{byte(n), 0xff},
		"s":     strings.Repeat("x", n),
		"fx":    [3]byte{1, 2, byte(n)},
		"e":     []string{"RED", "GREEN", "BLUE"}[n%3],
		"decb":  big.NewRat(-12345+int64(n), 100),
		"decf":  big.NewRat(987654321, 1000),
		"u":     "123e4567-e89b-12d3-a456-42661417400" + string(rune('0'+n)),
		"uf":    [16]byte{0: byte(n), 15: 0xab},
		"date":  ts,
		"tms":   1500 * time.Millisecond,
		"tus":   1500 * time.Microsecond,
		"tsms":  ts,
		"tsus":  ts,
		"tsns":  int64(-1500), // -1.5 µs: floors to -2 µs
		"ltsms": time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
		"dur":   [12]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0},
		"arr":   []any{int64(n), nil},
		"m":     map[string]any{"k": "v"},
		"rec":   map[string]any{"zip": "12345", "n": nil},
		"orec":  nil,
		"uni":   map[string]any{"string": "hello"},
	}
	if n == 1 {
		row["orec"] = map[string]any{"floe.test.Addr": map[string]any{"zip": "z", "n": map[string]any{"int": 7}}}
		row["uni"] = map[string]any{"int": 42}
		row["m"] = map[string]any{}
	}
	if n == 2 {
		row["uni"] = nil
	}
	return row
}

func marshal(t testing.TB, s avro.Schema, v any) []byte {
	t.Helper()
	b, err := avro.Marshal(s, v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func TestDecoderAllTypes(t *testing.T) {
	s := mustParse(t, allTypesSchema)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ArrowSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	if !dec.Schema().Equal(want) {
		t.Fatalf("decoder schema differs from ArrowSchema:\n%s\n%s", dec.Schema(), want)
	}
	payloads := [][]byte{marshal(t, s, allTypesRow(0)), marshal(t, s, allTypesRow(1)), marshal(t, s, allTypesRow(2))}
	rec, bad, err := dec.DecodeBatch(memory.NewGoAllocator(), payloads)
	if err != nil || len(bad) != 0 {
		t.Fatalf("err %v bad %v", err, bad)
	}
	defer rec.Release()
	if rec.NumRows() != 3 {
		t.Fatalf("rows = %d", rec.NumRows())
	}
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s", name)
		}
		return rec.Column(idx[0])
	}
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("b[1]", col("b").(*array.Boolean).Value(1), false)
	check("i[1]", col("i").(*array.Int32).Value(1), int32(-7))
	check("l[2]", col("l").(*array.Int64).Value(2), int64(3)<<40)
	check("f[1]", col("f").(*array.Float32).Value(1), float32(1.5))
	check("d[2]", col("d").(*array.Float64).Value(2), 2.5)
	check("by[1]", string(col("by").(*array.Binary).Value(1)), "\x01\xff")
	check("s[2]", col("s").(*array.String).Value(2), "xx")
	check("s[0]", col("s").(*array.String).Value(0), "")
	check("fx[2]", string(col("fx").(*array.FixedSizeBinary).Value(2)), "\x01\x02\x02")
	check("e[1]", col("e").(*array.String).Value(1), "GREEN")
	check("decb[0]", col("decb").(*array.Decimal128).Value(0), decimal128.FromI64(-12345))
	check("decb[2]", col("decb").(*array.Decimal128).Value(2), decimal128.FromI64(-12343))
	check("decf[0]", col("decf").(*array.Decimal128).Value(0), decimal128.FromI64(987654321))
	check("u[1]", col("u").(*extensions.UUIDArray).Value(1).String(), "123e4567-e89b-12d3-a456-426614174001")
	uf := col("uf").(*extensions.UUIDArray).Value(2)
	check("uf[2]", uf[0] == 2 && uf[15] == 0xab, true)
	check("date[0]", col("date").(*array.Date32).Value(0), arrow.Date32FromTime(time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)))
	check("tms[0]", col("tms").(*array.Time64).Value(0), arrow.Time64(1_500_000))
	check("tus[0]", col("tus").(*array.Time64).Value(0), arrow.Time64(1500))
	tsus := arrow.Timestamp(time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC).UnixMicro())
	check("tsms[0]", col("tsms").(*array.Timestamp).Value(0), tsus-456) // millis precision
	check("tsus[0]", col("tsus").(*array.Timestamp).Value(0), tsus)
	check("tsns[0]", col("tsns").(*array.Timestamp).Value(0), arrow.Timestamp(-2))
	check("ltsms[0]", col("ltsms").(*array.Timestamp).Value(0), arrow.Timestamp(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC).UnixMicro()))
	dur := col("dur").(*array.Struct)
	check("dur.months", dur.Field(0).(*array.Int32).Value(0), int32(1))
	check("dur.days", dur.Field(1).(*array.Int32).Value(0), int32(2))
	check("dur.millis", dur.Field(2).(*array.Int32).Value(0), int32(3))

	arr := col("arr").(*array.List)
	start, end := arr.ValueOffsets(2)
	check("arr[2] len", end-start, int64(2))
	vals := arr.ListValues().(*array.Int64)
	check("arr[2][0]", vals.Value(int(start)), int64(2))
	check("arr[2][1] null", vals.IsNull(int(start)+1), true)

	m := col("m").(*array.Map)
	ms, me := m.ValueOffsets(0)
	check("m[0] len", me-ms, int64(1))
	check("m[0] key", m.Keys().(*array.String).Value(int(ms)), "k")
	check("m[0] value", m.Items().(*array.String).Value(int(ms)), "v")
	ms, me = m.ValueOffsets(1)
	check("m[1] len", me-ms, int64(0))

	recCol := col("rec").(*array.Struct)
	check("rec.zip", recCol.Field(0).(*array.String).Value(0), "12345")
	check("rec.n null", recCol.Field(1).IsNull(0), true)
	orec := col("orec").(*array.Struct)
	check("orec[0] null", orec.IsNull(0), true)
	check("orec[1].zip", orec.Field(0).(*array.String).Value(1), "z")
	check("orec[1].n", orec.Field(1).(*array.Int32).Value(1), int32(7))

	uni := col("uni").(*array.Struct)
	check("uni[0].string", uni.Field(1).(*array.String).Value(0), "hello")
	check("uni[0].int null", uni.Field(0).IsNull(0), true)
	check("uni[1].int", uni.Field(0).(*array.Int32).Value(1), int32(42))
	check("uni[1].string null", uni.Field(1).IsNull(1), true)
	check("uni[2] null", uni.IsNull(2), true)
}

func TestDecoderErrors(t *testing.T) {
	simple := `{"type":"record","name":"T","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":{"type":"record","name":"C","fields":[
			{"name":"name","type":"string"},
			{"name":"tier","type":{"type":"enum","name":"Tier","symbols":["A","B"]}},
			{"name":"note","type":["null","string"]},
			{"name":"balance","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},
			{"name":"ref","type":{"type":"string","logicalType":"uuid"}}]}}]}`
	s := mustParse(t, simple)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	good := marshal(t, s, map[string]any{"id": int64(1), "customer": map[string]any{
		"name": "ann", "tier": "B", "note": nil, "balance": big.NewRat(1, 100), "ref": "123e4567-e89b-12d3-a456-426614174000"}})
	// Hand-built payloads: id=1 is 0x02; name "ann" is 0x06 'a' 'n' 'n'; tier B is 0x02;
	// note null is 0x00; balance 0.01 is 0x02 0x01; ref is 0x48 + 36 bytes.
	ref := append([]byte{0x48}, "123e4567-e89b-12d3-a456-426614174000"...)
	build := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	head := []byte{0x02, 0x06, 'a', 'n', 'n'}
	if got := build(head, []byte{0x02, 0x00, 0x02, 0x01}, ref); string(got) != string(good) {
		t.Fatalf("hand-built payload differs from hamba's:\n%x\n%x", got, good)
	}
	tests := []struct {
		name      string
		payload   []byte
		path      string
		want      string
		truncated bool
	}{
		{"empty", nil, "id", "payload ended", true},
		{"string longer than payload", []byte{0x02, 0x10, 'a'}, "customer.name", "longer than the payload", true},
		{"truncated string", []byte{0x02, 0x06, 'a'}, "customer.name", "payload ended", true},
		{"truncated in the middle", good[:len(good)-3], "customer.ref", "payload ended", true},
		{"trailing bytes", append(append([]byte{}, good...), 0x00), "", "trailing bytes", false},
		{"negative length", []byte{0x02, 0x05}, "customer.name", "negative length -3", false},
		{"bad enum index", build(head, []byte{0x04}), "customer.tier", "enum index 2 out of range", false},
		{"bad union index", build(head, []byte{0x02, 0x04}), "customer.note", "union index 2 out of range", false},
		{"decimal overflow", build(head, []byte{0x02, 0x00, 0x04, 0x27, 0x10}, ref), "customer.balance", "decimal overflow", false},
		{"invalid uuid", build(head, []byte{0x02, 0x00, 0x02, 0x01, 0x06}, []byte("nope!!")), "customer.ref", "invalid uuid", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bldr := array.NewRecordBuilder(memory.NewGoAllocator(), dec.Schema())
			defer bldr.Release()
			err := dec.Append(bldr.Fields(), tt.payload)
			if err == nil {
				t.Fatal("no error")
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if de.Path != tt.path {
				t.Errorf("path = %q, want %q (%v)", de.Path, tt.path, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if errors.Is(err, ErrTruncated) != tt.truncated {
				t.Errorf("errors.Is(ErrTruncated) = %v, want %v (%v)", !tt.truncated, tt.truncated, err)
			}
		})
	}
	// The decoder is usable again after an error.
	bldr := array.NewRecordBuilder(memory.NewGoAllocator(), dec.Schema())
	defer bldr.Release()
	if err := dec.Append(bldr.Fields(), good); err != nil {
		t.Fatalf("good payload after errors: %v", err)
	}
}

func TestDecoderMalformedBoolean(t *testing.T) {
	dec, err := NewDecoder(recordOf(t, `"boolean"`))
	if err != nil {
		t.Fatal(err)
	}
	bldr := array.NewRecordBuilder(memory.NewGoAllocator(), dec.Schema())
	defer bldr.Release()
	err = dec.Append(bldr.Fields(), []byte{0x05})
	if err == nil || !strings.Contains(err.Error(), "field f: malformed data") || errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v", err)
	}
}

func TestDecoderRejectsWrongBuilders(t *testing.T) {
	dec, err := NewDecoder(recordOf(t, `"long"`))
	if err != nil {
		t.Fatal(err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.BinaryTypes.String}}, nil)
	bldr := array.NewRecordBuilder(memory.NewGoAllocator(), other)
	defer bldr.Release()
	if err := dec.Append(bldr.Fields(), []byte{0x02}); err == nil || !strings.Contains(err.Error(), "want int64") {
		t.Fatalf("err = %v", err)
	}
	if err := dec.Append(nil, []byte{0x02}); err == nil {
		t.Fatal("no error for missing builders")
	}
}

func TestDecoderExtraColumnsLeftAlone(t *testing.T) {
	s := recordOf(t, `"long"`)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	withMeta := arrow.NewSchema(append(dec.Schema().Fields(), arrow.Field{Name: "__offset", Type: arrow.PrimitiveTypes.Int64}), nil)
	bldr := array.NewRecordBuilder(memory.NewGoAllocator(), withMeta)
	defer bldr.Release()
	for i := int64(0); i < 3; i++ {
		if err := dec.Append(bldr.Fields(), marshal(t, s, map[string]any{"f": i * 10})); err != nil {
			t.Fatal(err)
		}
		bldr.Field(1).(*array.Int64Builder).Append(100 + i)
	}
	rec := bldr.NewRecordBatch()
	defer rec.Release()
	if got := rec.Column(0).(*array.Int64).Value(2); got != 20 {
		t.Errorf("f[2] = %d", got)
	}
	if got := rec.Column(1).(*array.Int64).Value(2); got != 102 {
		t.Errorf("__offset[2] = %d", got)
	}
}

func TestDecodeBatchSkipsBadPayloads(t *testing.T) {
	s := mustParse(t, `{"type":"record","name":"T","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"map","values":{"type":"array","items":"string"}}}]}`)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id int64) []byte {
		return marshal(t, s, map[string]any{"id": id, "tags": map[string]any{"a": []any{"x", "y"}, "b": []any{}}})
	}
	// A bad payload that fails deep inside the map, after some builders got values.
	badDeep := row(99)
	badDeep = badDeep[:len(badDeep)-4]
	tests := []struct {
		name    string
		in      [][]byte
		wantIDs []int64
		wantBad []int
	}{
		{"all good", [][]byte{row(1), row(2)}, []int64{1, 2}, nil},
		{"none", nil, nil, nil},
		{"bad first", [][]byte{{0x01}, row(1), row(2)}, []int64{1, 2}, []int{0}},
		{"bad middle and last", [][]byte{row(1), badDeep, row(2), row(3), nil}, []int64{1, 2, 3}, []int{1, 4}},
		{"consecutive bad", [][]byte{row(1), badDeep, badDeep, row(2)}, []int64{1, 2}, []int{1, 2}},
		{"all bad", [][]byte{badDeep, {}}, nil, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec, bad, err := dec.DecodeBatch(mem, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			ids := rec.Column(0).(*array.Int64)
			if int(rec.NumRows()) != len(tt.wantIDs) {
				t.Fatalf("rows = %d, want %d", rec.NumRows(), len(tt.wantIDs))
			}
			for i, want := range tt.wantIDs {
				if ids.Value(i) != want {
					t.Errorf("id[%d] = %d, want %d", i, ids.Value(i), want)
				}
				m := rec.Column(1).(*array.Map)
				if s, e := m.ValueOffsets(i); e-s != 2 {
					t.Errorf("row %d has %d map entries", i, e-s)
				}
			}
			if len(bad) != len(tt.wantBad) {
				t.Fatalf("bad = %v, want indexes %v", bad, tt.wantBad)
			}
			for i, b := range bad {
				if b.Index != tt.wantBad[i] || b.Err == nil {
					t.Errorf("bad[%d] = %+v, want index %d", i, b, tt.wantBad[i])
				}
			}
		})
	}
}

func TestDecoderClone(t *testing.T) {
	s := recordOf(t, `"string"`)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	c := dec.Clone()
	if c == dec || c.prog != dec.prog || c.r == dec.r {
		t.Fatal("clone must share the program and own its reader")
	}
	rec, bad, err := c.DecodeBatch(nil, [][]byte{marshal(t, s, map[string]any{"f": "a"})})
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	defer rec.Release()
	if got := rec.Column(0).(*array.String).Value(0); got != "a" {
		t.Errorf("got %q", got)
	}
}

func TestDecimalFromBytes(t *testing.T) {
	tests := []struct {
		in   []byte
		want decimal128.Num
		ok   bool
	}{
		{nil, decimal128.Num{}, true},
		{[]byte{0x01}, decimal128.FromI64(1), true},
		{[]byte{0xff}, decimal128.FromI64(-1), true},
		{[]byte{0x80}, decimal128.FromI64(-128), true},
		{[]byte{0x00, 0x80}, decimal128.FromI64(128), true},
		{append([]byte{0xff, 0xff}, make([]byte, 16)...), decimal128.Num{}, false},
		{append([]byte{0x00}, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), decimal128.New(0x7fffffffffffffff, 0xffffffffffffffff), true},
		{append([]byte{0x00}, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), decimal128.Num{}, false},
		{append([]byte{0x01}, make([]byte, 16)...), decimal128.Num{}, false},
	}
	for _, tt := range tests {
		got, ok := decimalFromBytes(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("decimalFromBytes(%x) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseUUID(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"123e4567-e89b-12d3-a456-426614174000", true},
		{"123E4567-E89B-12D3-A456-426614174000", true},
		{"123e4567e89b12d3a456426614174000", false},
		{"123e4567-e89b-12d3-a456-42661417400g", false},
		{"123e4567-e89b-12d3-a456_426614174000", false},
		{"", false},
	}
	for _, tt := range tests {
		u, ok := parseUUID([]byte(tt.in))
		if ok != tt.ok {
			t.Errorf("parseUUID(%q) ok = %v", tt.in, ok)
		}
		if ok && (u[0] != 0x12 || u[15] != 0x00 || u[6] != 0x12) {
			t.Errorf("parseUUID(%q) = %x", tt.in, u)
		}
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tt := range []struct{ a, want int64 }{{1500, 1}, {-1500, -2}, {-1000, -1}, {0, 0}, {999, 0}, {-1, -1}} {
		if got := floorDiv(tt.a, 1000); got != tt.want {
			t.Errorf("floorDiv(%d) = %d, want %d", tt.a, got, tt.want)
		}
	}
}

func TestDecoderBlocksAndLargeValues(t *testing.T) {
	tests := []struct {
		name    string
		field   string
		payload []byte
		check   func(t *testing.T, col arrow.Array)
	}{
		{"array in two blocks, one with a byte size", `{"type":"array","items":"long"}`,
			// block of -2 items (zigzag 0x03) with size 2, items 1 and 2; block of 1 item: 3; end.
			[]byte{0x03, 0x04, 0x02, 0x04, 0x02, 0x06, 0x00},
			func(t *testing.T, col arrow.Array) {
				l := col.(*array.List)
				vals := l.ListValues().(*array.Int64)
				if vals.Len() != 3 || vals.Value(0) != 1 || vals.Value(2) != 3 {
					t.Errorf("values = %v", vals)
				}
			}},
		{"map in two blocks", `{"type":"map","values":"int"}`,
			[]byte{0x02, 0x02, 'a', 0x02, 0x02, 0x02, 'b', 0x04, 0x00},
			func(t *testing.T, col arrow.Array) {
				m := col.(*array.Map)
				if m.Keys().Len() != 2 || m.Keys().(*array.String).Value(1) != "b" || m.Items().(*array.Int32).Value(1) != 2 {
					t.Errorf("map = %v", m)
				}
			}},
		{"string over hamba's 1 MiB default limit", `"string"`,
			append(binaryVarint(3<<20), strings.Repeat("z", 3<<20)...),
			func(t *testing.T, col arrow.Array) {
				if got := len(col.(*array.String).Value(0)); got != 3<<20 {
					t.Errorf("len = %d", got)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec, err := NewDecoder(recordOf(t, tt.field))
			if err != nil {
				t.Fatal(err)
			}
			rec, bad, err := dec.DecodeBatch(nil, [][]byte{tt.payload})
			if err != nil || len(bad) != 0 {
				t.Fatal(err, bad)
			}
			defer rec.Release()
			tt.check(t, rec.Column(0))
		})
	}
}

func TestDecoderRejectsImpossibleBlockCount(t *testing.T) {
	dec, err := NewDecoder(recordOf(t, `{"type":"array","items":"long"}`))
	if err != nil {
		t.Fatal(err)
	}
	bldr := array.NewRecordBuilder(memory.NewGoAllocator(), dec.Schema())
	defer bldr.Release()
	err = dec.Append(bldr.Fields(), binaryVarint(1<<40))
	if err == nil || !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "cannot fit") {
		t.Fatalf("err = %v", err)
	}
}

// binaryVarint encodes n as an Avro (zigzag) long.
func binaryVarint(n int64) []byte {
	u := uint64(n<<1) ^ uint64(n>>63)
	var out []byte
	for u >= 0x80 {
		out = append(out, byte(u)|0x80)
		u >>= 7
	}
	return append(out, byte(u))
}
