package kafkastore

import (
	"context"
	"fmt"
	"time"

	"github.com/floehq/floe/host/store"
)

// Keys of the offset topic.
const (
	PrefixCommitted = "committed-"
	PrefixOverride  = "override-"
	PrefixCommitter = "committer-"
)

// CommitterPosition is a committer-<name> record: how far a connector's
// committer consumed the control topic, and under which epoch.
type CommitterPosition struct {
	// ControlPartition and ControlOffset are the next control-topic
	// record the committer will read.
	ControlPartition int32 `json:"control_partition"`
	ControlOffset    int64 `json:"control_offset"`
	// Epoch is the committer epoch that wrote the position.
	Epoch   int64     `json:"epoch"`
	Updated time.Time `json:"updated"`
}

// Offsets is the offset store on offset.storage.topic: committed offsets,
// offset overrides and committer positions. It implements
// [store.OffsetStore]. Writes go through a non-transactional producer and
// return once this store's reader applied them; the getters read the
// topic to its end first.
type Offsets struct {
	t *Table
}

var _ store.OffsetStore = (*Offsets)(nil)

// OpenOffsets creates offset.storage.topic if missing (compacted, with
// offset.storage.partitions) or validates it, and reads it to its end.
func OpenOffsets(ctx context.Context, s Settings, opts Options) (*Offsets, error) {
	t, err := openTable(ctx, s, s.OffsetTopic, opts, TableConfig{})
	if err != nil {
		return nil, err
	}
	return &Offsets{t: t}, nil
}

// Table returns the store's table.
func (o *Offsets) Table() *Table { return o.t }

// Close closes the store's clients.
func (o *Offsets) Close() { o.t.Close() }

// ReadToEnd reads the topic to its end.
func (o *Offsets) ReadToEnd(ctx context.Context) error { return o.t.ReadToEnd(ctx) }

func (o *Offsets) put(ctx context.Context, key string, v any) error {
	_, err := o.t.Write(ctx, Mutation{Key: key, Value: v})
	return err
}

// get reads to the end, then decodes key into v; a missing key wraps
// store.ErrNotFound.
func (o *Offsets) get(ctx context.Context, key, name string, v any) error {
	if err := o.t.ReadToEnd(ctx); err != nil {
		return err
	}
	r, ok := o.t.Get(key)
	if !ok {
		return fmt.Errorf("connector %q: %w", name, store.ErrNotFound)
	}
	return decodeData(o.t, r, v)
}

func (o *Offsets) delete(ctx context.Context, keys ...string) error {
	muts := make([]Mutation, len(keys))
	for i, k := range keys {
		muts[i] = Mutation{Key: k}
	}
	_, err := o.t.Write(ctx, muts...)
	return err
}

// PutCommitted implements [store.OffsetStore].
func (o *Offsets) PutCommitted(ctx context.Context, name string, c store.Committed) error {
	return o.put(ctx, PrefixCommitted+name, c)
}

// Committed implements [store.OffsetStore].
func (o *Offsets) Committed(ctx context.Context, name string) (store.Committed, error) {
	var c store.Committed
	err := o.get(ctx, PrefixCommitted+name, name, &c)
	return c, err
}

// PutOverride implements [store.OffsetStore].
func (o *Offsets) PutOverride(ctx context.Context, name string, ov store.Override) error {
	if ov.Positions == nil {
		ov.Positions = map[string]int64{}
	}
	return o.put(ctx, PrefixOverride+name, ov)
}

// Override implements [store.OffsetStore].
func (o *Offsets) Override(ctx context.Context, name string) (store.Override, error) {
	var ov store.Override
	err := o.get(ctx, PrefixOverride+name, name, &ov)
	return ov, err
}

// DeleteOverride implements [store.OffsetStore].
func (o *Offsets) DeleteOverride(ctx context.Context, name string) error {
	return o.delete(ctx, PrefixOverride+name)
}

// DeleteOffsets implements [store.OffsetStore]: committed offsets and any
// override go; the committer position stays (DeleteCommitter).
func (o *Offsets) DeleteOffsets(ctx context.Context, name string) error {
	return o.delete(ctx, PrefixCommitted+name, PrefixOverride+name)
}

// PutCommitter writes the connector's committer position.
func (o *Offsets) PutCommitter(ctx context.Context, name string, p CommitterPosition) error {
	if p.Updated.IsZero() {
		p.Updated = time.Now().UTC()
	}
	return o.put(ctx, PrefixCommitter+name, p)
}

// Committer returns the connector's committer position, or an error
// wrapping store.ErrNotFound.
func (o *Offsets) Committer(ctx context.Context, name string) (CommitterPosition, error) {
	var p CommitterPosition
	err := o.get(ctx, PrefixCommitter+name, name, &p)
	return p, err
}

// DeleteCommitter deletes the connector's committer position.
func (o *Offsets) DeleteCommitter(ctx context.Context, name string) error {
	return o.delete(ctx, PrefixCommitter+name)
}
