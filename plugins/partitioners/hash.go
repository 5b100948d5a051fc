package partitioners

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
)

// hashPartitioner is the hash component: each record goes to the writer its
// key hashes to, so equal keys (and the rows of one Iceberg partition)
// always share a writer.
type hashPartitioner struct{}

func (hashPartitioner) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	const who = "hash partitioner"
	if err := checkWriters("hash", req.Writers); err != nil {
		return nil, err
	}
	spec, err := keySpecFrom(req.Config)
	if err != nil {
		return nil, err
	}
	logKeySpec(logger(req.Logger), "hash", spec, req.Writers)
	return &hashTask{
		keys:   newKeyer(who, spec, req.Writers),
		spread: newSpreader(req.Writers),
		load:   newLoadMeter(req.Writers),
	}, nil
}

type hashTask struct {
	keys   *keyer
	spread *spreader // for records without a key
	load   *loadMeter
	closed atomic.Bool
}

// Partition hashes every record's key. Safe for concurrent use: it reads
// only immutable state, takes keyless records' turns with an atomic add,
// and merges load counts under a lock once per batch.
func (t *hashTask) Partition(ctx context.Context, b sdk.Batch) ([]uint32, error) {
	if err := checkCall(ctx, "hash", &t.closed, b); err != nil {
		return nil, err
	}
	rec := b.Records
	out := make([]uint32, rec.NumRows())
	if len(out) == 0 {
		return out, nil
	}
	bd, err := t.keys.bind(rec.Schema())
	if err != nil {
		return nil, err
	}
	if t.keys.spec.byKey {
		t.byKey(bd, rec, out)
	} else {
		s := t.keys.scratch(len(out))
		bd.keys(rec, s)
		route := t.keys.route
		for i, k := range s.keys {
			out[i] = route.home(k)
		}
		t.keys.release(s)
	}
	t.load.addWriters(out)
	return out, nil
}

// byKey partitions by the record key; records with a null key take turns,
// and a batch without keys is cut into contiguous runs like roundrobin's.
func (t *hashTask) byKey(bd *binding, rec arrow.RecordBatch, out []uint32) {
	col := bd.keyColumn(rec)
	if col == nil || col.NullN() == col.Len() {
		t.spread.chunks(out, make([]uint32, t.spread.writers))
		return
	}
	w := t.keys.route.w
	if a, ok := col.(*array.Binary); ok && a.NullN() == 0 {
		// The common case, kept free of calls it does not need.
		offs, data := a.ValueOffsets(), a.ValueBytes()
		base := offs[0]
		for i := range out {
			out[i] = fastRange(hashBytes(data[offs[i]-base:offs[i+1]-base]), w)
		}
		return
	}
	s := t.keys.scratch(len(out))
	bd.keys(rec, s)
	next := t.spread.turns(col.NullN())
	for i, k := range s.keys {
		if col.IsNull(i) {
			out[i] = next
			if next++; next == w {
				next = 0
			}
			continue
		}
		out[i] = fastRange(k, w)
	}
	t.keys.release(s)
}

// Columns says Partition reads only the key spec's columns (see
// sdk.PartitionerWithColumns): the host sends nothing else.
func (t *hashTask) Columns() []string { return t.keys.columns() }

// Load reports per-writer load relative to an even share (see
// sdk.PartitionerWithLoad); far above 1.0 on one writer means skewed keys,
// which the skew-aware partitioner handles.
func (t *hashTask) Load() []float64 { return t.load.Load() }

func (t *hashTask) Close(context.Context) error {
	t.closed.Store(true)
	return nil
}

// logger returns l, or a logger that discards, for callers that pass none.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// logKeySpec says at Open what the partitioner hashes, and warns about a
// partition spec of time transforms only: all of a day's rows then go to
// one writer, which is what hash promises but rarely what a streaming
// table wants.
func logKeySpec(l *slog.Logger, who string, spec keySpec, writers int) {
	parts := make([]string, len(spec.terms))
	onlyTime := true
	for i, t := range spec.terms {
		parts[i] = t.text
		onlyTime = onlyTime && isTimeTerm(t)
	}
	l.Info(who+" partitioner: hashing records", "by", parts, "from", spec.from, "writers", writers)
	if who == "hash" && onlyTime && !spec.byKey && writers > 1 {
		l.Warn("hash partitioner: the partition spec has only time transforms, so all rows of the current "+
			"period go to one writer while the others idle; use partitioner=skew-aware to spread the current "+
			"partition over several writers, or partitioner.fields to hash by other columns",
			"by", parts)
	}
}
