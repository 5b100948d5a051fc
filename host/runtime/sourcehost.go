package runtime

import (
	"context"
	"fmt"

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
func (h *sourceHost) StartPositions(_ context.Context, partitions []string) (map[string]int64, error) {
	return h.s.startPositions(partitions), nil
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
		return fmt.Errorf("schema %d: %w", sc.ID, err)
	}
	for _, ch := range changes {
		h.s.c.logger.Info("sink prepared for a new schema", "task", h.r.idx, "schema", sc.ID, "change", ch)
	}
	return nil
}

// DeadLetter stores records in the dead-letter queue, or returns the error
// the task must fail with (errors.tolerance=none, or the queue failed).
func (h *sourceHost) DeadLetter(ctx context.Context, records []sdk.DeadLetter) error {
	c := h.s.c
	err := c.dlq.Report(ctx, dlq.Origin{Connector: c.opts.Name, Task: h.r.idx, Component: c.opts.Components[sdk.KindSource]}, records)
	if err != nil {
		return err
	}
	c.progress.deadLetters.Add(int64(len(records)))
	c.metrics.DeadLetters(len(records))
	return nil
}
