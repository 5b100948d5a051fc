package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/floehq/floe/host/dlq"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// sourceHost is floe's side of one source task (client.SourceHost). The
// plugin calls it from its own goroutines, possibly during a Read.
type sourceHost struct {
	s *session
	r *taskRunner
}

var _ client.SourceHost = (*sourceHost)(nil)

// StartPositions answers from the host's accepted frontier: the sink's
// frontier (or the user's offset override) plus what was written since,
// so a reopened task neither skips nor repeats anything.
func (h *sourceHost) StartPositions(ctx context.Context, partitions []string) (map[string]int64, error) {
	return h.s.startPositions(ctx, partitions), nil
}

// PartitionsRevoked takes checkpoints until the revoked partitions are
// committed up to what the task handed on, bounded by RevokeTimeout.
func (h *sourceHost) PartitionsRevoked(ctx context.Context, next map[string]int64) error {
	if len(next) == 0 {
		return nil
	}
	return h.s.waitCommitted(ctx, next)
}

// AdmitSchema asks the sink to prepare for the schema; a rejection comes
// back wrapping sdk.ErrSchemaRejected and the source dead-letters.
func (h *sourceHost) AdmitSchema(ctx context.Context, sc client.Schema) error {
	changes, err := h.s.sink.PrepareSchema(ctx, sc)
	if err != nil {
		return err // names the plugin, the sink and the schema already
	}
	for _, ch := range changes {
		h.s.c.logger.Info("sink prepared for a new schema", "task", h.r.idx, "schema", sc.ID, "change", ch)
	}
	return nil
}

// DeadLetter stores records in the dead-letter queue, or returns the error
// the task must fail with (errors.tolerance=none, or the queue failed: it
// could not connect, or the broker refused the records).
//
// The plugin calls it during a Read, with the Read's deadline. When the
// queue is merely slow (still connecting, or waiting for the broker's
// acknowledgement) an answer would be an error, and the task would fail;
// no answer before the deadline makes gRPC reset the call, which the
// plugin may also take for a failure. So shortly before the deadline the
// host ends the task's Read instead: the plugin sees its ctx end, keeps
// the records and forms them again on its next Read, and that Report takes
// up where this one stopped (the queue does not produce them twice).
func (h *sourceHost) DeadLetter(ctx context.Context, records []sdk.DeadLetter) error {
	c := h.s.c
	rctx, cancel := answerContext(ctx)
	defer cancel()
	err := c.dlq.Report(rctx, dlq.Origin{Connector: c.opts.Name, Task: h.r.idx, Component: c.opts.Components[sdk.KindSource].Name}, records)
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		c.logger.Debug("dead-letter queue not ready within the source's Read; ending the Read so the source retries", "task", h.r.idx, "error", err)
		h.r.endCurrentRead()
		<-ctx.Done() // the plugin gives the call up
		return err
	}
	if err != nil {
		if errors.Is(err, sdk.ErrPermanent) {
			h.r.refused.Store(true)
		}
		return err
	}
	c.progress.deadLetters.Add(int64(len(records)))
	c.metrics.DeadLetters(len(records))
	return nil
}

// answerContext ends a little before ctx's deadline, so that an answer
// reaches the caller before gRPC resets the call: a fifth of the time
// left, between 5 ms and 200 ms.
func answerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(max(time.Until(dl)/5, 5*time.Millisecond), 200*time.Millisecond)
	return context.WithDeadline(ctx, dl.Add(-margin))
}
