package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/pb"
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
}

// OpenSink opens a sink.
func (p *Process) OpenSink(ctx context.Context, req SinkOpen) (*SinkTask, error) {
	label := fmt.Sprintf("sink %q of connector %q", req.Component, req.Connector)
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
	return &SinkTask{p: p, handle: resp.GetHandle(), label: label}, nil
}

// Frontier returns the sink's committed positions, or sdk.ErrUnsupported.
func (t *SinkTask) Frontier(ctx context.Context) (sdk.Frontier, error) {
	resp, err := t.p.sink.Frontier(ctx, &pb.FrontierRequest{Handle: t.handle})
	if err != nil {
		return sdk.Frontier{}, t.p.callError(ctx, t.label+": frontier", err)
	}
	pos := resp.GetPositions()
	if pos == nil {
		pos = map[string]int64{}
	}
	return sdk.Frontier{Positions: pos, Checkpoint: resp.GetCheckpoint()}, nil
}

// PrepareSchema readies the sink for a schema; a rejection wraps
// sdk.ErrSchemaRejected. A sink without schema support accepts all.
func (t *SinkTask) PrepareSchema(ctx context.Context, s Schema) ([]string, error) {
	resp, err := t.p.sink.PrepareSchema(ctx, &pb.PrepareSchemaRequest{Handle: t.handle, Schema: schemaToProto(s)})
	if err != nil {
		e := t.p.callError(ctx, fmt.Sprintf("%s: prepare schema %d", t.label, s.ID), err)
		if errors.Is(e, sdk.ErrUnsupported) {
			return nil, nil
		}
		return nil, e
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
	if len(b.IPC) == 0 {
		return nil, nil
	}
	resp, err := t.p.sink.Write(ctx, &pb.WriteRequest{Handle: t.handle, Checkpoint: checkpoint, Batch: batchToProto(b), Writers: writers})
	if err != nil {
		return nil, t.p.callError(ctx, fmt.Sprintf("%s: write checkpoint %d, partition %s [%d, %d)", t.label, checkpoint, b.Partition, b.From, b.Next), err)
	}
	return rejectedFromProto(resp.GetRejected()), nil
}

// Flush closes a checkpoint's files (phase 1).
func (t *SinkTask) Flush(ctx context.Context, checkpoint uint64) ([]sdk.WriteResult, error) {
	resp, err := t.p.sink.Flush(ctx, &pb.FlushRequest{Handle: t.handle, Checkpoint: checkpoint})
	if err != nil {
		return nil, t.p.callError(ctx, fmt.Sprintf("%s: flush checkpoint %d", t.label, checkpoint), err)
	}
	return writeResultsFromProto(resp.GetResults()), nil
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
