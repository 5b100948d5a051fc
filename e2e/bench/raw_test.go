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
	ctx := context.Background()
	raw, err := NewRawTable(ctx, t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.Close() }()
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
