package iceberg

import (
	"context"
	"fmt"

	"github.com/floehq/floe/sdk"
)

// Flush closes every writer's files of a checkpoint and returns, per
// writer that had rows for it, the description of its data files (the
// payload; see payload.go). It registers nothing: a crash after Flush
// leaves orphan files, never visible rows.
//
// A writer closes a checkpoint's files when it sees the first write of a
// later checkpoint or this flush, whichever comes first; the files finish
// in the background while the writer goes on with the next checkpoint.
func (t *task) Flush(ctx context.Context, checkpoint uint64) ([]sdk.WriteResult, error) {
	if err := t.closedErr(); err != nil {
		return nil, err
	}
	replies := make([]chan flushReply, len(t.writers))
	t.closeMu.RLock()
	for i, w := range t.writers {
		replies[i] = make(chan flushReply, 1)
		if err := w.enqueue(ctx, writeItem{checkpoint: checkpoint, flush: replies[i]}); err != nil {
			t.closeMu.RUnlock()
			return nil, err
		}
	}
	t.closeMu.RUnlock()

	t.mu.Lock()
	if !t.anyFlush || checkpoint > t.flushed {
		t.flushed, t.anyFlush = checkpoint, true
	}
	t.mu.Unlock()
	t.reportUnrouted(checkpoint)

	var out []sdk.WriteResult
	for i, ch := range replies {
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, r.err
			}
			if r.ok {
				out = append(out, r.result)
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("iceberg sink: flush checkpoint %d: waiting for writer %d: %w", checkpoint, i, ctx.Err())
		case <-t.life.Done():
			return nil, errClosed
		}
	}
	return out, nil
}
