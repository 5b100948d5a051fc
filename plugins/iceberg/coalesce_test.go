package iceberg

import (
	"context"
	"testing"

	"github.com/floehq/floe/sdk"
)

// TestSmallBatchesGathered: a paced source sends batches of a few dozen
// rows, each spread over two writers, which gather them before the
// Parquet writer sees them: past the threshold twice, and a rest that
// only the flush hands on. Every row lands once (a rest left behind at
// the flush would be missing), one file per writer. The gathering's
// effect on CPU is measured, not tested (plugins/iceberg/README.md).
func TestSmallBatchesGathered(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)

	const perBatch = 37
	batches := int(coalesceRows*2/perBatch) + 3 // past the threshold twice, plus a rest
	var all []sdk.Batch
	for i := range batches {
		b := batchV1("orders/0", int64(i*perBatch), perBatch)
		writers := make([]uint32, perBatch)
		for r := range writers {
			writers[r] = uint32((i + r) % 2)
		}
		all = append(all, b)
		if _, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: 1, Batch: b, Writers: writers}); err != nil {
			t.Fatalf("write batch %d: %v", i, err)
		}
		b.Records.Release()
	}
	commits := flushCommit(t, tk, 1, ranges(all...))
	total := int64(batches * perBatch)
	if len(commits) != 1 || commits[0].Records != total {
		t.Fatalf("commits = %+v, want one of %d records", commits, total)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"orders/0": {0, total}})
	if commits[0].Files != 2 {
		t.Fatalf("%d data files, want one per writer", commits[0].Files)
	}
}
