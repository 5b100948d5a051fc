package client

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk/internal/pb"
	"github.com/floehq/floe/sdk/internal/shm"
)

// SourceOpen opens one source task.
type SourceOpen struct {
	Component string
	Connector string
	Task      int
	Tasks     int
	Config    map[string]string
	Host      SourceHost
}

// SourceTask is a source task in a plugin process. Read, Commit and Close
// follow sdk.SourceTask's rules: one call at a time per task.
type SourceTask struct {
	p      *Process
	handle uint64
	label  string
	host   *hostServer
	acked  atomic.Uint64 // seq of the last response received
}

// OpenSource opens a source task. It serves req.Host to the task until
// Close. An invalid config fails with an *Error listing the bad keys.
func (p *Process) OpenSource(ctx context.Context, req SourceOpen) (*SourceTask, error) {
	label := fmt.Sprintf("source %q task %d of connector %q", req.Component, req.Task, req.Connector)
	if req.Host == nil {
		return nil, fmt.Errorf("plugin %s: %s: open: no SourceHost given", baseName(p.name), label)
	}
	hs := newHostServer(req.Host)
	id := p.broker.NextId()
	go p.broker.AcceptAndServe(id, hs.newGRPCServer)
	resp, err := p.source.Open(ctx, &pb.SourceOpenRequest{
		Component:    req.Component,
		Connector:    req.Connector,
		Task:         int32(req.Task),
		Tasks:        int32(req.Tasks),
		Config:       req.Config,
		HostBrokerId: id,
		SharedMemory: p.shared && !p.sharedFailed.Load() && shm.Supported(),
	})
	if err != nil {
		hs.stop()
		return nil, p.openError(ctx, "source", label, err)
	}
	return &SourceTask{p: p, handle: resp.GetHandle(), label: label, host: hs}, nil
}

// openError explains an Open the plugin cannot serve at all.
func (p *Process) openError(ctx context.Context, kind, label string, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented {
		return &Error{Plugin: p.name, Op: label + ": open",
			Message: "this plugin binary serves no " + kind + " components (check the connector's component names with `floe plugins`)"}
	}
	return p.callError(ctx, label+": open", err)
}

// ReadResult is one Read's answer.
type ReadResult struct {
	Batches    []Batch
	EndOfInput bool
	// TimedOut is set when ctx ended before the plugin answered. A source
	// must return when its ctx ends (the SDK gives it a deadline a little
	// before the call's), so this means it did not; whatever it returns
	// later stays queued in the plugin for the next Read.
	TimedOut bool
}

// Read returns up to max batches, waiting at most until ctx ends. When ctx
// ends before the plugin has anything, Read returns an empty result and no
// error, as sdk.SourceTask.Read does; batches the plugin had ready too late
// stay queued in the plugin for the next Read, so none is lost. Once
// EndOfInput is set, later Reads return it again with no batches.
func (t *SourceTask) Read(ctx context.Context, max int) (ReadResult, error) {
	resp, err := t.p.source.Read(ctx, &pb.SourceReadRequest{Handle: t.handle, MaxBatches: int32(max), Acked: t.acked.Load()})
	if err != nil {
		if st, _ := status.FromError(err); (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) && ctxEnded(ctx) {
			return ReadResult{TimedOut: true}, nil
		}
		return ReadResult{}, t.p.callError(ctx, t.label+": read", err)
	}
	out := ReadResult{EndOfInput: resp.GetEndOfInput(), Batches: make([]Batch, len(resp.GetBatches()))}
	for i, b := range resp.GetBatches() {
		if out.Batches[i], err = batchFromProto(b); err != nil {
			for _, done := range out.Batches[:i] {
				done.Release()
			}
			// Not acknowledged: the plugin sends these batches again. Its
			// shared memory could not be opened, so ask for bytes from
			// the next task on (a task restart; or the Read retried).
			t.p.sharedFailed.Store(true)
			if t.p.hasExited(exitWait) {
				// It died after it answered, taking its memory files
				// along: a crash like any other, restarted the normal way.
				return ReadResult{}, &Error{Plugin: t.p.name, Op: t.label + ": read", Exited: true,
					Message: "the plugin process ended before its batches' shared memory was opened (" + err.Error() + "): " + t.p.reason()}
			}
			return ReadResult{}, t.p.callError(ctx, t.label+": read", err)
		}
	}
	if seq := resp.GetSeq(); seq != 0 {
		t.acked.Store(seq)
	}
	return out, nil
}

// Commit reports durable positions to the source.
func (t *SourceTask) Commit(ctx context.Context, positions map[string]int64) error {
	if _, err := t.p.source.Commit(ctx, &pb.SourceCommitRequest{Handle: t.handle, Positions: positions}); err != nil {
		return t.p.callError(ctx, t.label+": commit", err)
	}
	return nil
}

// Close closes the task and stops serving its SourceHost. The handle is
// freed even when the plugin's Close fails.
func (t *SourceTask) Close(ctx context.Context) error {
	defer t.host.stop()
	if _, err := t.p.source.Close(ctx, &pb.CloseRequest{Handle: t.handle}); err != nil {
		return t.p.callError(ctx, t.label+": close", err)
	}
	return nil
}

func quote(s string) string { return strconv.Quote(s) }
