package schemas

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
)

// benchSchema is the ~200-byte, 10-field event the stack probe measured.
const benchSchema = `{"type":"record","name":"Event","namespace":"floe.bench","fields":[
	{"name":"id","type":"long"},
	{"name":"event_id","type":{"type":"string","logicalType":"uuid"}},
	{"name":"user_id","type":"long"},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
	{"name":"updated_at","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
	{"name":"amount","type":"double"},
	{"name":"discount","type":["null","double"]},
	{"name":"country","type":"string"},
	{"name":"quantity","type":"int"},
	{"name":"comment","type":"string"}]}`

// benchMessages returns n Confluent-framed messages of benchSchema.
func benchMessages(tb testing.TB, n int) (avro.Schema, [][]byte) {
	tb.Helper()
	s := mustParse(tb, benchSchema)
	rng := rand.New(rand.NewPCG(1, 2))
	countries := []string{"DE", "FR", "US", "BR", "JP", "IN"}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	msgs := make([][]byte, n)
	for i := range msgs {
		var u [16]byte
		for j := range u {
			u[j] = byte(rng.IntN(256))
		}
		row := map[string]any{
			"id":         int64(i),
			"event_id":   fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]),
			"user_id":    rng.Int64N(10_000_000),
			"ts":         base.Add(time.Duration(i) * time.Millisecond),
			"updated_at": nil,
			"amount":     rng.Float64() * 1000,
			"discount":   nil,
			"country":    countries[rng.IntN(len(countries))],
			"quantity":   rng.IntN(100),
			"comment":    strings.Repeat(string(rune('a'+i%26)), 100+rng.IntN(20)),
		}
		if i%2 == 0 {
			row["updated_at"] = base.Add(time.Duration(i) * time.Second)
			row["discount"] = rng.Float64()
		}
		payload, err := avro.Marshal(s, row)
		if err != nil {
			tb.Fatal(err)
		}
		msgs[i] = AppendConfluent(nil, 1, payload)
	}
	return s, msgs
}

// TestDecoderMatchesGenericDecode cross-checks the direct decoder against
// hamba's generic decode on the benchmark data.
func TestDecoderMatchesGenericDecode(t *testing.T) {
	s, msgs := benchMessages(t, 1000)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, len(msgs))
	for i, m := range msgs {
		_, payloads[i], err = SplitConfluent(m)
		if err != nil {
			t.Fatal(err)
		}
	}
	rec, bad, err := dec.DecodeBatch(memory.NewGoAllocator(), payloads)
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	defer rec.Release()
	for i, p := range payloads {
		var m map[string]any
		if err := avro.Unmarshal(s, p, &m); err != nil {
			t.Fatal(err)
		}
		got := []any{
			rec.Column(0).(*array.Int64).Value(i),
			rec.Column(1).(*extensions.UUIDArray).Value(i).String(),
			rec.Column(2).(*array.Int64).Value(i),
			int64(rec.Column(3).(*array.Timestamp).Value(i)),
			rec.Column(5).(*array.Float64).Value(i),
			rec.Column(7).(*array.String).Value(i),
			rec.Column(8).(*array.Int32).Value(i),
			rec.Column(9).(*array.String).Value(i),
		}
		want := []any{
			m["id"], m["event_id"], m["user_id"], m["ts"].(time.Time).UnixMicro(),
			m["amount"], m["country"], int32(m["quantity"].(int)), m["comment"],
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("row %d value %d: direct %v, generic %v", i, j, got[j], want[j])
			}
		}
		if upd, ok := m["updated_at"].(time.Time); ok != rec.Column(4).IsValid(i) ||
			(ok && int64(rec.Column(4).(*array.Timestamp).Value(i)) != upd.UnixMicro()) {
			t.Fatalf("row %d updated_at: generic %v", i, m["updated_at"])
		}
		if disc, ok := m["discount"].(float64); ok != rec.Column(6).IsValid(i) ||
			(ok && rec.Column(6).(*array.Float64).Value(i) != disc) {
			t.Fatalf("row %d discount: generic %v", i, m["discount"])
		}
	}
}

// BenchmarkDecoder compares the direct decoder (Confluent split + Avro
// straight into Arrow builders, batches of 10,000 rows) with hamba's
// generic avro.Unmarshal into map[string]any (which builds no Arrow at
// all). One op is one record; rec/s (wall clock) and rec/cpu-s (process
// CPU time, steadier on a busy machine) are reported per run. Measure one
// core with GOMAXPROCS=1.
func BenchmarkDecoder(b *testing.B) {
	s, msgs := benchMessages(b, 10_000)
	var total int
	for _, m := range msgs {
		total += len(m)
	}
	avgSize := int64(total / len(msgs))

	b.Run("direct-arrow", func(b *testing.B) {
		dec, err := NewDecoder(s)
		if err != nil {
			b.Fatal(err)
		}
		bldr := array.NewRecordBuilder(memory.NewGoAllocator(), dec.Schema())
		defer bldr.Release()
		cols := bldr.Fields()
		bldr.Reserve(10_000)
		b.SetBytes(avgSize)
		b.ReportAllocs()
		b.ResetTimer()
		start, cpu := time.Now(), processCPU()
		for i := 0; i < b.N; i++ {
			_, payload, err := SplitConfluent(msgs[i%len(msgs)])
			if err != nil {
				b.Fatal(err)
			}
			if err := dec.Append(cols, payload); err != nil {
				b.Fatal(err)
			}
			if (i+1)%10_000 == 0 {
				bldr.NewRecordBatch().Release()
				bldr.Reserve(10_000)
			}
		}
		bldr.NewRecordBatch().Release()
		reportRate(b, start, cpu)
	})

	b.Run("unmarshal-map", func(b *testing.B) {
		b.SetBytes(avgSize)
		b.ReportAllocs()
		b.ResetTimer()
		start, cpu := time.Now(), processCPU()
		for i := 0; i < b.N; i++ {
			_, payload, err := SplitConfluent(msgs[i%len(msgs)])
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if err := avro.Unmarshal(s, payload, &m); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, start, cpu)
	})
}

// reportRate reports records per wall-clock second and per CPU-second of
// the process (GC included).
func reportRate(b *testing.B, start time.Time, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rec/s")
	if used := processCPU() - cpu; used > 0 {
		b.ReportMetric(float64(b.N)/used.Seconds(), "rec/cpu-s")
	}
}
