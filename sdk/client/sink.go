package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/pb"
	"github.com/floehq/floe/sdk/internal/shm"
)

// SinkOpen opens a connector's sink.
type SinkOpen struct {
	Component string
	Connector string
	Config    map[string]string
	Writers   int
	// OffsetsReset is the user's pending offset override, if any (see
	// sdk.OffsetsReset).
	OffsetsReset *sdk.OffsetsReset
}

// SinkTask is a sink in a plugin process. See sdk.SinkTask for ordering.
type SinkTask struct {
	p      *Process
	handle uint64
	label  string
	decl   Component // what the binary declares of the component
	// shared: the sink reads batches from shared memory, so a batch that
	// is there goes on as a handle.
	shared bool
}

// OpenSink opens a sink. It learns the component's capabilities from the
// binary's Describe answer (asked once per process) before it opens.
func (p *Process) OpenSink(ctx context.Context, req SinkOpen) (*SinkTask, error) {
	label := fmt.Sprintf("sink %q of connector %q", req.Component, req.Connector)
	decl, err := p.declared(ctx, sdk.KindSink, req.Component)
	if err != nil {
		return nil, err
	}
	resp, err := p.sink.Open(ctx, &pb.SinkOpenRequest{
		Component:    req.Component,
		Connector:    req.Connector,
		Config:       req.Config,
		Writers:      int32(req.Writers),
		OffsetsReset: offsetsResetToProto(req.OffsetsReset),
	})
	if err != nil {
		return nil, p.openError(ctx, "sink", label, err)
	}
	return &SinkTask{p: p, handle: resp.GetHandle(), label: label, decl: decl,
		shared: p.shared && resp.GetSharedMemory() && shm.Supported()}, nil
}

// Capabilities returns the optional calls the sink declares.
func (t *SinkTask) Capabilities() []sdk.Capability { return slices.Clone(t.decl.Capabilities) }

// Frontier returns the sink's committed positions. A sink that declares
// no frontier capability is not asked: the error wraps sdk.ErrUnsupported.
func (t *SinkTask) Frontier(ctx context.Context) (sdk.Frontier, error) {
	if !t.decl.Has(sdk.CapabilityFrontier) {
		return sdk.Frontier{}, &Error{Plugin: t.p.name, Op: t.label + ": frontier",
			Message: "the sink declares no frontier capability", sentinel: sdk.ErrUnsupported}
	}
	resp, err := t.p.sink.Frontier(ctx, &pb.FrontierRequest{Handle: t.handle})
	if err != nil {
		return sdk.Frontier{}, t.declaredError(ctx, t.label+": frontier", sdk.CapabilityFrontier, err)
	}
	pos := resp.GetPositions()
	if pos == nil {
		pos = map[string]int64{}
	}
	return sdk.Frontier{Positions: pos, Checkpoint: resp.GetCheckpoint()}, nil
}

// PrepareSchema readies the sink for a schema; a rejection wraps
// sdk.ErrSchemaRejected. A sink that declares no schemas capability is
// not asked: it accepts every schema.
func (t *SinkTask) PrepareSchema(ctx context.Context, s Schema) ([]string, error) {
	if !t.decl.Has(sdk.CapabilitySchemas) {
		return nil, nil
	}
	resp, err := t.p.sink.PrepareSchema(ctx, &pb.PrepareSchemaRequest{Handle: t.handle, Schema: schemaToProto(s)})
	if err != nil {
		return nil, t.declaredError(ctx, fmt.Sprintf("%s: prepare schema %d", t.label, s.ID), sdk.CapabilitySchemas, err)
	}
	if !resp.GetAccepted() {
		reason := resp.GetReason()
		if reason == "" {
			reason = "no reason given"
		}
		return nil, fmt.Errorf("plugin %s: %s: %w: schema %d: %s", baseName(t.p.name), t.label, sdk.ErrSchemaRejected, s.ID, reason)
	}
	return resp.GetChanges(), nil
}

// Write hands a batch to the writers. A batch without rows (every record
// skipped) is not sent.
func (t *SinkTask) Write(ctx context.Context, checkpoint uint64, b Batch, writers []uint32) ([]sdk.Rejected, error) {
	if !b.HasRows() {
		return nil, nil
	}
	op := fmt.Sprintf("%s: write checkpoint %d, partition %s [%d, %d)", t.label, checkpoint, b.Partition, b.From, b.Next)
	wire := batchToProto(b)
	switch {
	case b.shared != nil && t.shared:
		// Only the handle of this process's descriptor travels; it stays
		// open until the sink has read the batch (this call returns).
		wire.Shared = &pb.SharedRecords{Pid: int32(os.Getpid()), Fd: int32(b.shared.Fd()), Size: b.shared.Size()}
	case b.shared != nil:
		data, err := b.bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		wire.Records = data
	}
	resp, err := t.p.sink.Write(ctx, &pb.WriteRequest{Handle: t.handle, Checkpoint: checkpoint, Batch: wire, Writers: writers})
	runtime.KeepAlive(b.shared)
	if err != nil {
		return nil, t.p.callError(ctx, op, err)
	}
	return rejectedFromProto(resp.GetRejected()), nil
}

// Flushed is what a sink's Flush of a checkpoint reports.
type Flushed struct {
	Results []sdk.WriteResult
	// Skipped counts the records the sink dropped on purpose (see
	// sdk.SinkTaskWithSkips); 0 from sinks that drop none.
	Skipped int64
}

// Flush closes a checkpoint's files (phase 1).
func (t *SinkTask) Flush(ctx context.Context, checkpoint uint64) (Flushed, error) {
	resp, err := t.p.sink.Flush(ctx, &pb.FlushRequest{Handle: t.handle, Checkpoint: checkpoint})
	if err != nil {
		return Flushed{}, t.p.callError(ctx, fmt.Sprintf("%s: flush checkpoint %d", t.label, checkpoint), err)
	}
	return Flushed{Results: writeResultsFromProto(resp.GetResults()), Skipped: resp.GetSkipped()}, nil
}

// Commit registers a checkpoint's files (phase 2).
func (t *SinkTask) Commit(ctx context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	resp, err := t.p.sink.Commit(ctx, &pb.SinkCommitRequest{
		Handle:     t.handle,
		Checkpoint: req.Checkpoint,
		Ranges:     rangesToProto(req.Ranges),
		Results:    writeResultsToProto(req.Results),
	})
	if err != nil {
		return nil, t.p.callError(ctx, fmt.Sprintf("%s: commit checkpoint %d", t.label, req.Checkpoint), err)
	}
	return tableCommitsFromProto(resp.GetCommits()), nil
}

// Close closes the sink.
func (t *SinkTask) Close(ctx context.Context) error {
	if _, err := t.p.sink.Close(ctx, &pb.CloseRequest{Handle: t.handle}); err != nil {
		return t.p.callError(ctx, t.label+": close", err)
	}
	return nil
}

// SinkWaits asks the sink component of connector which services it is
// waiting for (sdk.SinkWithWaits); it needs no open task. A component
// that declares no waits capability is not asked: the error wraps
// sdk.ErrUnsupported.
func (p *Process) SinkWaits(ctx context.Context, component, connector string) ([]sdk.ServiceWait, error) {
	op := fmt.Sprintf("sink %q of connector %q: waits", component, connector)
	decl, err := p.declared(ctx, sdk.KindSink, component)
	if err != nil {
		return nil, err
	}
	if !decl.Has(sdk.CapabilityWaits) {
		return nil, &Error{Plugin: p.name, Op: op, Message: "the sink declares no waits capability", sentinel: sdk.ErrUnsupported}
	}
	resp, err := p.sink.Waits(ctx, &pb.SinkWaitsRequest{Component: component, Connector: connector})
	if err != nil {
		e := p.callError(ctx, op, err)
		var pe *Error
		if errors.Is(e, sdk.ErrUnsupported) && errors.As(e, &pe) {
			return nil, &Error{Plugin: pe.Plugin, Op: pe.Op, Exited: pe.Exited,
				Message: "the sink declares the waits capability but does not serve the call: " + pe.Message}
		}
		return nil, e
	}
	var out []sdk.ServiceWait
	for _, w := range resp.GetWaits() {
		out = append(out, sdk.ServiceWait{Service: w.GetService(), Since: time.UnixMilli(w.GetSinceUnixMs()),
			Attempts: w.GetAttempts(), LastError: w.GetLastError()})
	}
	return out, nil
}

// declaredError is callError for an optional call the sink declared: an
// UNIMPLEMENTED answer breaks the declaration and is an error, not
// sdk.ErrUnsupported.
func (t *SinkTask) declaredError(ctx context.Context, op string, capa sdk.Capability, err error) error {
	e := t.p.callError(ctx, op, err)
	var pe *Error
	if errors.Is(e, sdk.ErrUnsupported) && errors.As(e, &pe) {
		return &Error{Plugin: pe.Plugin, Op: pe.Op, Exited: pe.Exited,
			Message: fmt.Sprintf("the sink declares the %s capability but does not serve the call: %s", capa, pe.Message)}
	}
	return e
}
