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
	} else if old, err := w.store.Connector(ctx, c.name); err == nil {
		rec.Created = old.Created
	}
	if err := w.store.PutConnector(ctx, rec); err != nil {
		return fmt.Errorf("connector %s: %w", c.name, err)
	}
	return nil
}

// watch records a runtime's end in the status store.
func (w *Worker) watch(c *conn, rt *runtime.Connector) {
	<-rt.Done()
	st := w.status(c)
	rec := store.Status{Connector: store.InstanceStatus{State: string(st.Connector.State), WorkerID: w.cfg.WorkerID, Trace: st.Connector.Trace}, Updated: time.Now().UTC()}
	for _, t := range st.Tasks {
		rec.Tasks = append(rec.Tasks, store.InstanceStatus{State: string(t.State), WorkerID: t.WorkerID, Trace: t.Trace})
	}
	if rt.Err() == nil {
		return
	}
	// A failure is recorded even while the worker closes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.life), 10*time.Second)
	defer cancel()
	if err := w.store.PutStatus(ctx, c.name, rec); err != nil {
		w.logger.Warn("cannot store the connector's status", "connector", c.name, "error", err)
	}
}
