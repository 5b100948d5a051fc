package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/arrowipc"
	"github.com/floehq/floe/sdk/internal/pb"
)

// PartitionerOpen opens a connector's partitioner.
type PartitionerOpen struct {
	Component string
	Connector string
	Config    map[string]string
	Writers   int
	// WholeBatches sends whole batches even to a partitioner that
	// declared its columns, for conformance kits that compare its answers
	// both ways. floe's host never sets it.
	WholeBatches bool
}

// PartitionerTask is a partitioner in a plugin process. Safe for
// concurrent use.
type PartitionerTask struct {
	p       *Process
	handle  uint64
	label   string
	writers int
	decl    Component // what the binary declares of the component
	// columns are the only columns Partition sends, when projected (the
	// task declared them at Open; see sdk.PartitionerWithColumns).
	columns   []string
	projected bool
}

// OpenPartitioner opens a partitioner.
func (p *Process) OpenPartitioner(ctx context.Context, req PartitionerOpen) (*PartitionerTask, error) {
	label := fmt.Sprintf("partitioner %q of connector %q", req.Component, req.Connector)
	if req.Writers <= 0 {
		return nil, fmt.Errorf("plugin %s: %s: open: %d writers; need at least 1", baseName(p.name), label, req.Writers)
	}
	decl, err := p.declared(ctx, sdk.KindPartitioner, req.Component)
	if err != nil {
		return nil, err
	}
	resp, err := p.partitioner.Open(ctx, &pb.PartitionerOpenRequest{
		Component: req.Component,
		Connector: req.Connector,
		Config:    req.Config,
		Writers:   int32(req.Writers),
	})
	if err != nil {
		return nil, p.openError(ctx, "partitioner", label, err)
	}
	t := &PartitionerTask{p: p, handle: resp.GetHandle(), label: label, writers: req.Writers, decl: decl}
	if c := resp.GetColumns(); c != nil {
		t.columns, t.projected = c.GetNames(), !req.WholeBatches
	}
	return t, nil
}

// Columns returns the columns the partitioner declared at Open, and
// whether Partition sends only those (see sdk.PartitionerWithColumns);
// otherwise it sends whole batches.
func (t *PartitionerTask) Columns() ([]string, bool) { return slices.Clone(t.columns), t.projected }

// Capabilities returns the optional parts the partitioner declares.
func (t *PartitionerTask) Capabilities() []sdk.Capability { return slices.Clone(t.decl.Capabilities) }

// Partition returns a writer per record and, if the partitioner declares
// the load capability, the per-writer load. A partitioner that declared
// its columns at Open is sent only those columns of b (see Columns). The answer is checked: exactly
// one writer per record, each in [0, writers), load only when declared and
// then none or one value per writer; anything else is an error naming the
// plugin.
func (t *PartitionerTask) Partition(ctx context.Context, b Batch) (writers []uint32, load []float64, err error) {
	if b.NumRecords == 0 {
		return nil, nil, nil
	}
	op := fmt.Sprintf("%s: partition %s [%d, %d)", t.label, b.Partition, b.From, b.Next)
	wire := batchToProto(b)
	switch {
	case t.projected:
		// Only the declared columns travel; the others are not even read
		// (in shared memory, their pages are not even touched).
		err = b.mapped(func(data []byte) error {
			proj, _, err := arrowipc.Project(data, t.columns)
			if err == nil && b.shared != nil && len(proj) > 0 && &proj[0] == &data[0] {
				proj = slices.Clone(proj) // every column kept: the mapping goes
			}
			wire.Records = proj
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", op, err)
		}
	case b.shared != nil:
		if wire.Records, err = b.bytes(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	resp, err := t.p.partitioner.Partition(ctx, &pb.PartitionRequest{Handle: t.handle, Batch: wire})
	if err != nil {
		return nil, nil, t.p.callError(ctx, t.label+": partition", err)
	}
	writers = resp.GetWriters()
	if int64(len(writers)) != b.NumRecords {
		return nil, nil, &Error{Plugin: t.p.name, Op: op,
			Message: fmt.Sprintf("returned %d writer indexes for %d records; a partitioner must return exactly one per record", len(writers), b.NumRecords)}
	}
	for i, w := range writers {
		if int(w) >= t.writers {
			return nil, nil, &Error{Plugin: t.p.name, Op: op,
				Message: fmt.Sprintf("record %d went to writer %d, outside [0, %d)", i, w, t.writers)}
		}
	}
	load = resp.GetLoad()
	switch {
	case !t.decl.Has(sdk.CapabilityLoad) && len(load) > 0:
		return nil, nil, &Error{Plugin: t.p.name, Op: op,
			Message: fmt.Sprintf("reported the load of %d writers, but the partitioner declares no load capability", len(load))}
	case len(load) > 0 && len(load) != t.writers:
		return nil, nil, &Error{Plugin: t.p.name, Op: op,
			Message: fmt.Sprintf("reported the load of %d writers, not %d; a partitioner with the load capability reports every writer's", len(load), t.writers)}
	}
	return writers, load, nil
}

// Close closes the partitioner.
func (t *PartitionerTask) Close(ctx context.Context) error {
	if _, err := t.p.partitioner.Close(ctx, &pb.CloseRequest{Handle: t.handle}); err != nil {
		return t.p.callError(ctx, t.label+": close", err)
	}
	return nil
}
