package datagen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/plugins/datagen/internal/recycle"
	"github.com/floehq/floe/sdk"
)

// schemaID is the id of datagen's only value schema.
const schemaID = 1

// recycleLimit bounds the free Arrow buffers a task keeps for its next
// batches. Batches are released as soon as the protocol has encoded them,
// so a task needs about one Read's worth (a few batches, ~2 MB each at
// the default batch size).
const recycleLimit = 32 << 20

// source opens datagen tasks. It holds no state: tasks of one connector
// may be opened concurrently.
type source struct{}

// Open implements [sdk.Source]: it validates the config, compiles the
// generator, claims the task's partitions, asks the host where they
// resume and admits the schema.
func (source) Open(ctx context.Context, req sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	tasks := max(req.Tasks, 1)
	if req.Task < 0 || req.Task >= tasks {
		return nil, fmt.Errorf("datagen: task %d out of range [0, %d)", req.Task, tasks)
	}
	if req.Host == nil {
		return nil, errors.New("datagen: open: no host")
	}
	set, err := parseSettings(req.Config, tasks)
	if err != nil {
		return nil, fmt.Errorf("datagen: %w", err)
	}
	gen, err := generate.New(set.schema, set.opts)
	if err != nil {
		key := KeyShape + " " + set.name
		switch {
		case errors.Is(err, generate.ErrKeyField):
			key = KeyKeyField
		case req.Config.String(KeySchemaFile) != "":
			key = KeySchemaFile + " " + req.Config.String(KeySchemaFile)
		}
		return nil, fmt.Errorf("datagen: %s: %w", key, err)
	}
	log := req.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &task{
		log:       log.With("task", req.Task),
		gen:       gen,
		batchSize: set.batchSize,
		mem:       recycle.New(recycleLimit),
	}

	var names []string
	for p := req.Task; p < set.partitions; p += tasks {
		part := &partition{index: p, name: set.name + "/" + strconv.Itoa(p), end: -1}
		if set.count > 0 {
			part.end = set.count / int64(set.partitions)
			if int64(p) < set.count%int64(set.partitions) {
				part.end++
			}
		}
		t.parts = append(t.parts, part)
		names = append(names, part.name)
	}
	if len(names) > 0 {
		starts, err := req.Host.StartPositions(ctx, names)
		if err != nil {
			return nil, fmt.Errorf("datagen: start positions: %w", err)
		}
		for _, part := range t.parts {
			if pos, ok := starts[part.name]; ok {
				if pos < 0 {
					return nil, fmt.Errorf("datagen: start position %d of %s is negative", pos, part.name)
				}
				part.next = pos
			}
		}
	}
	if set.rate > 0 && len(t.parts) > 0 {
		// The task's share of the connector's rate is its share of the
		// partitions: rate/tasks when they divide evenly, and no rate lost
		// to tasks without partitions when they do not.
		t.limit = newLimiter(set.rate*float64(len(t.parts))/float64(set.partitions), set.batchSize)
	}

	value := gen.ArrowSchema()
	fields := append(value.Fields(),
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	)
	t.nvalue = value.NumFields()
	t.builder = array.NewRecordBuilder(t.mem, arrow.NewSchema(fields, nil))

	// Before the first batch, once. A rejection fails the task at its
	// first Read (datagen has no other schema to fall back on, and its
	// records are not worth dead-lettering); a host that cannot answer
	// fails Open.
	if err := req.Host.AdmitSchema(ctx, sdk.Schema{ID: schemaID, Avro: set.schemaJSON, Arrow: value}); err != nil {
		if !errors.Is(err, sdk.ErrSchemaRejected) {
			t.builder.Release()
			return nil, fmt.Errorf("datagen: admit schema %s: %w", set.name, err)
		}
		t.rejected = fmt.Errorf("datagen: schema %s: %w", set.name, err)
		t.log.Error("datagen schema rejected; the task fails at its first read", "error", err)
	}
	t.log.Info("datagen task opened", "schema", set.name, "partitions", names,
		"rate", t.rateString(), "count", set.count, "key", gen.KeyField())
	return t, nil
}

// partition is one source partition of a task.
type partition struct {
	index int
	name  string
	next  int64
	// end is the offset after the partition's last record, -1 unbounded.
	end int64
}

func (p *partition) done() bool { return p.end >= 0 && p.next >= p.end }

// task is one running datagen task.
type task struct {
	log       *slog.Logger
	gen       *generate.Generator
	parts     []*partition
	turn      int // index of the partition the next batch comes from
	batchSize int
	limit     *limiter // nil: as fast as Read is called
	mem       memory.Allocator
	builder   *array.RecordBuilder
	nvalue    int
	key       []byte
	keyLen    int // bytes per key to reserve, from the batches so far
	committed map[string]int64
	// rejected is the host's rejection of the schema, returned by Read.
	rejected error
	closed   bool
}

func (t *task) rateString() string {
	if t.limit == nil {
		return "unlimited"
	}
	return strconv.FormatFloat(t.limit.rate, 'f', -1, 64) + "/s"
}

// Read implements [sdk.SourceTask]: up to max batches, each one
// partition's next run of offsets, taking the partitions in turn.
func (t *task) Read(ctx context.Context, maxBatches int) ([]sdk.Batch, error) {
	if t.closed {
		return nil, errors.New("datagen: read after close")
	}
	if t.rejected != nil {
		return nil, t.rejected
	}
	maxBatches = max(maxBatches, 1)
	var out []sdk.Batch
	for len(out) < maxBatches {
		if ctx.Err() != nil {
			return out, nil
		}
		p := t.nextPartition()
		if p == nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, sdk.ErrEndOfInput
		}
		n := t.batchSize
		if p.end >= 0 {
			n = int(min(int64(n), p.end-p.next))
		}
		if t.limit != nil {
			if len(out) == 0 {
				n = t.limit.wait(ctx, n)
			} else {
				n = t.limit.take(n)
			}
			if n == 0 {
				return out, nil
			}
		}
		out = append(out, t.batch(p, n))
		t.turn++
	}
	return out, nil
}

// nextPartition returns the next unfinished partition in turn, or nil.
func (t *task) nextPartition() *partition {
	for range t.parts {
		p := t.parts[t.turn%len(t.parts)]
		if !p.done() {
			return p
		}
		t.turn++
	}
	return nil
}

// batch generates records [p.next, p.next+n) of p.
func (t *task) batch(p *partition, n int) sdk.Batch {
	cols := t.builder.Fields()
	offsets := cols[t.nvalue].(*array.Int64Builder)
	stamps := cols[t.nvalue+1].(*array.TimestampBuilder)
	keys := cols[t.nvalue+2].(*array.BinaryBuilder)
	hasKey := t.gen.KeyField() != ""
	// Size every buffer once: growing Arrow builders value by value costs
	// more than generating the values.
	t.gen.Reserve(cols[:t.nvalue], n)
	for _, b := range cols[t.nvalue:] {
		b.Resize(b.Len() + n)
	}
	if hasKey {
		keys.ReserveData(n * t.keyLen)
	}
	now := arrow.Timestamp(time.Now().UnixMilli())
	from := p.next
	for o := from; o < from+int64(n); o++ {
		t.gen.AppendArrow(cols, p.index, o)
		offsets.Append(o)
		stamps.Append(now)
		if hasKey {
			t.key = t.gen.AppendLastKey(t.key[:0])
			keys.Append(t.key)
		} else {
			keys.AppendNull()
		}
	}
	p.next = from + int64(n)
	if hasKey {
		t.keyLen = max(t.keyLen, keys.DataLen()/n+1)
	}
	return sdk.Batch{
		Partition: p.name,
		From:      from,
		Next:      p.next,
		SchemaID:  schemaID,
		Records:   t.builder.NewRecordBatch(),
	}
}

// Commit implements [sdk.SourceTask]. Datagen has nothing to acknowledge:
// it notes the positions for its logs.
func (t *task) Commit(_ context.Context, positions map[string]int64) error {
	if t.committed == nil {
		t.committed = make(map[string]int64, len(positions))
	}
	for p, pos := range positions {
		t.committed[p] = pos
	}
	t.log.Debug("datagen positions committed", "positions", positions)
	return nil
}

// Close implements [sdk.SourceTask]; calling it again does nothing.
func (t *task) Close(context.Context) error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.builder.Release()
	t.log.Info("datagen task closed")
	return nil
}
