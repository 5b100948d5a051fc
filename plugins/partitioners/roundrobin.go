package partitioners

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/floehq/floe/sdk"
)

// roundRobin is the roundrobin component: Flink's "shuffle". It ignores
// keys and spreads records evenly, each batch in contiguous runs.
type roundRobin struct{}

func (roundRobin) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	if err := checkWriters("roundrobin", req.Writers); err != nil {
		return nil, err
	}
	return &roundRobinTask{spread: newSpreader(req.Writers), load: newLoadMeter(req.Writers)}, nil
}

type roundRobinTask struct {
	spread *spreader
	load   *loadMeter
	closed atomic.Bool
}

// Partition cuts the batch into one contiguous run per writer, the first
// run going to the writer after the previous batch's first.
func (t *roundRobinTask) Partition(ctx context.Context, b sdk.Batch) ([]uint32, error) {
	if err := checkCall(ctx, "roundrobin", &t.closed, b); err != nil {
		return nil, err
	}
	out := make([]uint32, b.Records.NumRows())
	counts := make([]uint32, t.spread.writers)
	t.spread.chunks(out, counts)
	t.load.add(counts, len(out))
	return out, nil
}

// Columns says Partition reads no column at all (see
// sdk.PartitionerWithColumns): the host sends only the row count.
func (t *roundRobinTask) Columns() []string { return nil }

// Load reports per-writer load relative to an even share (see
// sdk.PartitionerWithLoad).
func (t *roundRobinTask) Load() []float64 { return t.load.Load() }

func (t *roundRobinTask) Close(context.Context) error {
	t.closed.Store(true)
	return nil
}

// spreader hands out writers in turn, for roundrobin and for records that
// have no key. Safe for concurrent use: turns are taken with atomic adds.
type spreader struct {
	writers uint32
	mod     modulus
	batches atomic.Uint64 // first writer of the next batch's runs
	records atomic.Uint64 // next writer for a keyless record
}

func newSpreader(writers int) *spreader {
	return &spreader{writers: uint32(writers), mod: newModulus(uint32(writers))}
}

// chunks fills out with W contiguous runs: run j holds records
// [j*n/W, (j+1)*n/W) and goes to writer (start+j) mod W, start advancing by
// one per batch, so the runs that a batch size leaves one record longer
// rotate over the writers. It adds each writer's records to counts.
func (s *spreader) chunks(out, counts []uint32) {
	w := uint64(s.writers)
	n := uint64(len(out))
	if n == 0 {
		return
	}
	start := (s.batches.Add(1) - 1) % w
	for j := range min(w, n) {
		// With fewer records than writers, runs are single records: give
		// them to consecutive writers.
		lo, hi := j, j+1
		if n >= w {
			lo, hi = j*n/w, (j+1)*n/w
		}
		wr := uint32((start + j) % w)
		for i := lo; i < hi; i++ {
			out[i] = wr
		}
		counts[wr] += uint32(hi - lo)
	}
}

// turns reserves n consecutive per-record turns and returns the writer of
// the first; the k-th record of them goes to (first + k) mod W.
func (s *spreader) turns(n int) uint32 {
	if n == 0 {
		return 0
	}
	next := s.records.Add(uint64(n))
	return uint32((next - uint64(n)) % uint64(s.writers))
}

func checkWriters(who string, n int) error {
	if n < 1 {
		return fmt.Errorf("%s partitioner: writers must be at least 1, got %d", who, n)
	}
	if n > 1<<24 {
		return fmt.Errorf("%s partitioner: at most %d writers, got %d", who, 1<<24, n)
	}
	return nil
}

// checkCall rejects calls on a closed task, with a cancelled context or
// without records.
func checkCall(ctx context.Context, who string, closed *atomic.Bool, b sdk.Batch) error {
	if closed.Load() {
		return fmt.Errorf("%s partitioner: Partition called after Close", who)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.Records == nil {
		return fmt.Errorf("%s partitioner: batch of partition %q [%d, %d) has no records", who, b.Partition, b.From, b.Next)
	}
	return nil
}
