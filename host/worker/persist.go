package worker

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
)

// persist stores the connector's config and target state.
func (w *Worker) persist(ctx context.Context, c *conn, created bool) error {
	c.mu.Lock()
	rec := store.Connector{Name: c.name, Config: maps.Clone(c.config), Target: c.target, Updated: time.Now().UTC()}
	c.mu.Unlock()
	if created {
		rec.Created = rec.Updated
	} else if old, err := w.configs.Connector(ctx, c.name); err == nil {
		rec.Created = old.Created
	}
	if err := w.configs.PutConnector(ctx, rec); err != nil {
		return fmt.Errorf("connector %s: %w", c.name, err)
	}
	return nil
}

// watch records a runtime's end in the status store.
func (w *Worker) watch(c *conn, rt *runtime.Connector) {
	if w.deps.Placement != nil {
		w.publishStatus(c, rt)
	}
	<-rt.Done()
	st, ours := w.statusOf(c, rt)
	if rt.Err() == nil || !ours || !w.runsHere(c.name) {
		// A clean end, or a runtime stopped because the connector moved:
		// whoever runs it now reports.
		return
	}
	rec := storedStatus(st, w.cfg.WorkerID)
	// A failure is recorded even while the worker closes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.life), 10*time.Second)
	defer cancel()
	if err := w.putStatus(ctx, c.name, rec, rt); err != nil {
		w.logger.Warn("cannot store the connector's status", "connector", c.name, "error", err)
	}
}
