package partitioners

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/twmb/murmur3"
)

// The Iceberg spec's bucket hash test vectors (Appendix B).
func TestBucketHashSpecVectors(t *testing.T) {
	day := int64(17486) // 2017-11-16
	ts := time.Date(2017, 11, 16, 22, 31, 8, 0, time.UTC).UnixMicro()
	for _, c := range []struct {
		name string
		got  uint32
		want int32
	}{
		{"int 34", icebergBucketInt(34), 2017239379},
		{"long 34", icebergBucketInt(34), 2017239379},
		{"decimal(9,2) 14.20", decimalBucketHash(decimal128.FromI64(1420)), -500754589},
		{"date 2017-11-16", icebergBucketInt(day), -653330422},
		{"time 22:31:08", icebergBucketInt((22*3600 + 31*60 + 8) * 1e6), -662762989},
		{"timestamp 2017-11-16T22:31:08", icebergBucketInt(ts), -2047944441},
		{"string iceberg", icebergBucketBytes([]byte("iceberg")), 1210000089},
		{"uuid", icebergBucketBytes([]byte{0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7}), 1488055340},
		{"binary 00010203", icebergBucketBytes([]byte{0, 1, 2, 3}), -188683207},
	} {
		if int32(c.got) != c.want {
			t.Errorf("%s: hash %d, want %d", c.name, int32(c.got), c.want)
		}
	}
	// The unrolled eight-byte murmur3 agrees with the library everywhere.
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := int64(r.Uint64())
		var b [8]byte
		for i := range b {
			b[i] = byte(uint64(v) >> (8 * i))
		}
		if got, want := icebergBucketInt(v), murmur3.Sum32(b[:]); got != want {
			t.Fatalf("icebergBucketInt(%d) = %d, murmur3 says %d", v, got, want)
		}
	}
}

// evalTerm runs the column code for one transform over arr.
func evalTerm(t *testing.T, text string, arr arrow.Array, raw bool) []uint64 {
	t.Helper()
	terms, err := parsePartitionBy(text)
	if err != nil || len(terms) != 1 {
		t.Fatalf("parse %q: %v %v", text, terms, err)
	}
	fn, err := compileTerm(terms[0], arr.DataType(), raw)
	if err != nil {
		t.Fatalf("compile %q for %s: %v", text, arr.DataType(), err)
	}
	dst := make([]uint64, arr.Len())
	fn(arr, dst, make([]int64, arr.Len()))
	return dst
}

// instants returns microsecond timestamps over ±300 years, with the day and
// hour boundaries around the epoch that floor division gets wrong when done
// carelessly.
func instants(n int) []int64 {
	r := rand.New(rand.NewPCG(3, 4))
	out := []int64{0, -1, 1, 86400e6 - 1, 86400e6, -86400e6, -86400e6 - 1, -86400e6 + 1, 3600e6, -3600e6, -3600e6 - 1}
	for len(out) < n {
		out = append(out, r.Int64N(2*9_467_280_000_000_000)-9_467_280_000_000_000)
	}
	return out
}

func TestTimeTransformsMatchIcebergGo(t *testing.T) {
	micros := instants(5000)
	for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		vals := make([]int64, len(micros))
		for i, us := range micros {
			switch unit {
			case arrow.Second:
				vals[i] = us / 1e6
			case arrow.Millisecond:
				vals[i] = us / 1e3
			case arrow.Microsecond:
				vals[i] = us
			case arrow.Nanosecond:
				vals[i] = us/2*1000 + us%1000 // sub-microsecond digits; halved to stay within int64
			}
		}
		arr := timestampCol("ts", unit, vals).arr
		for _, c := range []struct {
			text string
			tf   iceberg.TimeTransform
		}{
			{"year(ts)", iceberg.YearTransform{}},
			{"month(ts)", iceberg.MonthTransform{}},
			{"day(ts)", iceberg.DayTransform{}},
			{"hour(ts)", iceberg.HourTransform{}},
		} {
			got := evalTerm(t, c.text, arr, false)
			var ice func(any) iceberg.Optional[int32]
			var err error
			if unit == arrow.Nanosecond {
				ice, err = c.tf.Transformer(iceberg.PrimitiveTypes.TimestampTzNs)
			} else {
				ice, err = c.tf.Transformer(iceberg.PrimitiveTypes.TimestampTz)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				var in any
				switch unit {
				case arrow.Second:
					in = iceberg.Timestamp(v * 1e6)
				case arrow.Millisecond:
					in = iceberg.Timestamp(v * 1e3)
				case arrow.Microsecond:
					in = iceberg.Timestamp(v)
				case arrow.Nanosecond:
					in = iceberg.TimestampNano(v)
				}
				want := ice(in)
				if got[i] != mix64(uint64(int64(want.Val))) {
					t.Fatalf("%s on timestamp[%s] %d: iceberg-go says %d, we hash something else", c.text, unit, v, want.Val)
				}
			}
		}
	}
}

func TestDateTransformsMatchIcebergGo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	days := []int32{0, -1, 1, 59, 60, -719468, 2932896}
	for len(days) < 5000 {
		days = append(days, int32(r.IntN(2*110_000)-110_000))
	}
	b := array.NewDate32Builder(memory.DefaultAllocator)
	ms := array.NewDate64Builder(memory.DefaultAllocator)
	for _, d := range days {
		b.Append(arrow.Date32(d))
		ms.Append(arrow.Date64(int64(d)*86400e3 + 1234))
	}
	for _, arr := range []arrow.Array{b.NewArray(), ms.NewArray()} {
		for _, c := range []struct {
			text string
			tf   iceberg.TimeTransform
		}{
			{"year(d)", iceberg.YearTransform{}},
			{"month(d)", iceberg.MonthTransform{}},
			{"day(d)", iceberg.DayTransform{}},
		} {
			got := evalTerm(t, c.text, arr, false)
			ice, err := c.tf.Transformer(iceberg.PrimitiveTypes.Date)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range days {
				want := ice(iceberg.Date(d))
				if got[i] != mix64(uint64(int64(want.Val))) {
					t.Fatalf("%s on %s day %d: iceberg-go says %d", c.text, arr.DataType(), d, want.Val)
				}
			}
		}
		// bucket of a date is the bucket of its day number.
		got := evalTerm(t, "bucket(16, d)", arr, true)
		ice := iceberg.BucketTransform{NumBuckets: 16}.Transformer(iceberg.PrimitiveTypes.Date)
		for i, d := range days {
			if want := ice(iceberg.Date(d)); got[i] != uint64(want.Val) {
				t.Fatalf("bucket(16) of %s day %d: got %d, iceberg-go %d", arr.DataType(), d, got[i], want.Val)
			}
		}
	}
}

func TestBucketMatchesIcebergGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n = 3000
	for _, buckets := range []int{1, 7, 16, 1000} {
		text := func(col string) string { return "bucket(" + col + ", " + strconv.Itoa(buckets) + ")" }
		tf := iceberg.BucketTransform{NumBuckets: buckets}

		i64 := make([]int64, n)
		i32 := array.NewInt32Builder(memory.DefaultAllocator)
		strs := make([]string, n)
		dec := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 38, Scale: 2})
		for i := range n {
			i64[i] = int64(r.Uint64()) >> r.IntN(64)
			i32.Append(int32(i64[i]))
			strs[i] = randString(r)
			dec.Append(decimal128.New(int64(r.Uint64())>>r.IntN(64), r.Uint64()>>r.IntN(64)))
		}
		i32a, deca := i32.NewArray(), dec.NewArray()

		check := func(name string, got []uint64, want func(i int) int32) {
			t.Helper()
			for i := range got {
				if got[i] != uint64(want(i)) {
					t.Fatalf("bucket[%d] %s row %d: got %d, iceberg-go %d", buckets, name, i, got[i], want(i))
				}
			}
		}
		ice := tf.Transformer(iceberg.PrimitiveTypes.Int64)
		check("long", evalTerm(t, text("id"), int64Col("id", i64).arr, true), func(i int) int32 { return ice(i64[i]).Val })
		ice32 := tf.Transformer(iceberg.PrimitiveTypes.Int32)
		check("int", evalTerm(t, text("id"), i32a, true), func(i int) int32 { return ice32(i32a.(*array.Int32).Value(i)).Val })
		iceS := tf.Transformer(iceberg.PrimitiveTypes.String)
		check("string", evalTerm(t, text("s"), stringCol("s", strs).arr, true), func(i int) int32 { return iceS(strs[i]).Val })
		iceD := tf.Transformer(iceberg.DecimalTypeOf(38, 2))
		check("decimal", evalTerm(t, text("d"), deca, true), func(i int) int32 {
			return iceD(iceberg.Decimal{Val: deca.(*array.Decimal128).Value(i), Scale: 2}).Val
		})
		micros := instants(n)
		iceT := tf.Transformer(iceberg.PrimitiveTypes.TimestampTz)
		check("timestamp[us]", evalTerm(t, text("ts"), timestampCol("ts", arrow.Microsecond, micros).arr, true),
			func(i int) int32 { return iceT(iceberg.Timestamp(micros[i])).Val })
		ms := make([]int64, n)
		for i, us := range micros {
			ms[i] = floorDiv(us, 1000)
		}
		check("timestamp[ms]", evalTerm(t, text("ts"), timestampCol("ts", arrow.Millisecond, ms).arr, true),
			func(i int) int32 { return iceT(iceberg.Timestamp(ms[i] * 1000)).Val })
		iceNs := tf.Transformer(iceberg.PrimitiveTypes.TimestampTzNs)
		check("timestamp[ns]", evalTerm(t, text("ts"), timestampCol("ts", arrow.Nanosecond, micros).arr, true),
			func(i int) int32 { return iceNs(iceberg.TimestampNano(micros[i])).Val })
	}
}

func TestTruncateMatchesIcebergGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 3000
	for _, w := range []int{1, 3, 10, 100} {
		tf := iceberg.TruncateTransform{Width: w}
		text := "truncate(" + strconv.Itoa(w) + ", c)"

		i64 := make([]int64, n)
		strs := make([]string, n)
		dec := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 38, Scale: 2})
		for i := range n {
			i64[i] = int64(r.Uint64()) >> r.IntN(64)
			strs[i] = randString(r)
			dec.Append(decimal128.New(int64(r.Uint64())>>r.IntN(64), r.Uint64()))
		}
		deca := dec.NewArray().(*array.Decimal128)

		ice, _ := tf.Transformer(iceberg.PrimitiveTypes.Int64)
		got := evalTerm(t, text, int64Col("c", i64).arr, false)
		for i, v := range i64 {
			if want := ice(v).(int64); got[i] != mix64(uint64(want)) {
				t.Fatalf("truncate[%d] long %d: iceberg-go %d, we hash something else", w, v, want)
			}
		}
		iceS, _ := tf.Transformer(iceberg.PrimitiveTypes.String)
		got = evalTerm(t, text, stringCol("c", strs).arr, false)
		for i, s := range strs {
			if want := iceS(s).(string); got[i] != hashBytes([]byte(want)) {
				t.Fatalf("truncate[%d] string %q: iceberg-go %q, we hash something else", w, s, want)
			}
		}
		iceD, _ := tf.Transformer(iceberg.DecimalTypeOf(38, 2))
		got = evalTerm(t, text, deca, false)
		for i := range n {
			want := iceD(iceberg.Decimal{Val: deca.Value(i), Scale: 2}).(iceberg.Decimal).Val
			if got[i] != combine(mix64(want.LowBits()), uint64(want.HighBits())) {
				t.Fatalf("truncate[%d] decimal %s: iceberg-go %s", w, deca.Value(i).ToString(0), want.ToString(0))
			}
		}
	}
}

func randString(r *rand.Rand) string {
	const alphabet = "abcxyzé日本語🙂"
	runes := []rune(alphabet)
	b := make([]rune, r.IntN(20))
	for i := range b {
		b[i] = runes[r.IntN(len(runes))]
	}
	return string(b)
}
