package bench

import (
	"context"
	"os"
	"testing"

	"github.com/floehq/floe/plugins/datagen/generate"
)

// TestRawLimitWritesEveryRecord runs the raw limit on a few thousand
// records of the benchmark schema: it must decode and write them all.
func TestRawLimitWritesEveryRecord(t *testing.T) {
	g, raw := newRawTable(t)
	ctx := context.Background()
	work := []*Payloads{GeneratePayloads(g, 0, 0, 12_000), GeneratePayloads(g, 1, 0, 8_000)}
	res, err := raw.Run(ctx, work, 5000, 128<<20)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 20_000 || res.Files != 2 || res.FileBytes == 0 {
		t.Errorf("raw run: %+v; want 20000 records in 2 files", res)
	}
	if want := AvroBytes(g, map[int][2]int64{0: {0, 12_000}, 1: {0, 8_000}}); res.AvroBytes != want {
		t.Errorf("Avro bytes %d, AvroBytes says %d", res.AvroBytes, want)
	}
	t.Logf("%.0f records/s, %.1f MB/s, %.2f CPU-s", res.Rate(), res.MBps(), res.CPU.Seconds())
}

// TestRawLimitInChunksWritesTheWhole: the datagen section's limit writes
// as many records as a floe run, one chunk of fresh offsets at a time.
func TestRawLimitInChunksWritesTheWhole(t *testing.T) {
	g, raw := newRawTable(t)
	res, err := raw.RunChunks(context.Background(), g, 2, 10_000, 4_000, 5000, 128<<20)
	if err != nil {
		t.Fatal(err)
	}
	// 5,000 per partition in runs of 2,000: 3 runs of 2 files each.
	if res.Records != 10_000 || res.Files != 6 {
		t.Errorf("raw run in chunks: %+v; want 10000 records in 6 files", res)
	}
	if want := AvroBytes(g, map[int][2]int64{0: {0, 5_000}, 1: {0, 5_000}}); res.AvroBytes != want {
		t.Errorf("Avro bytes %d, AvroBytes of offsets 0..4999 says %d: the chunks must not repeat offsets", res.AvroBytes, want)
	}
}

func newRawTable(t *testing.T) (*generate.Generator, *RawTable) {
	t.Helper()
	js, err := os.ReadFile("testdata/event.avsc")
	if err != nil {
		t.Fatal(err)
	}
	s, err := generate.Parse(string(js))
	if err != nil {
		t.Fatal(err)
	}
	g, err := generate.New(s, generate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := NewRawTable(context.Background(), t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	return g, raw
}
