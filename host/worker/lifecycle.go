package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
)

// Pause implements [API]: tasks stop reading; what was read commits.
func (w *Worker) Pause(ctx context.Context, name string) error {
	return w.setTarget(ctx, name, store.TargetPaused)
}

// Resume implements [API]; it also starts a STOPPED connector.
func (w *Worker) Resume(ctx context.Context, name string) error {
	return w.setTarget(ctx, name, store.TargetRunning)
}

// Stop implements [API]: final checkpoint and commit, then every plugin
// process ends; the config stays. Offsets can then be altered or reset.
func (w *Worker) Stop(ctx context.Context, name string) error {
	return w.setTarget(ctx, name, store.TargetStopped)
}

func (w *Worker) setTarget(ctx context.Context, name string, target store.TargetState) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	if err := c.lockOp(ctx); err != nil {
		return err
	}
	defer c.op.unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	c.mu.Lock()
	prev, rt, failure := c.target, c.rt, c.failure
	c.target = target
	c.mu.Unlock()
	if err := w.persist(ctx, c, false); err != nil {
		return err
	}
	switch target {
	case store.TargetStopped:
		return w.stopLocked(ctx, c)
	case store.TargetPaused, store.TargetRunning:
		if rt == nil && failure == "" {
			w.startLocked(c)
			return nil
		}
		if rt != nil {
			if target == store.TargetPaused {
				rt.Pause()
			} else {
				rt.Resume()
			}
		}
	}
	if prev != target {
		w.logger.Info("connector state changed", "connector", name, "from", prev, "to", target)
	}
	return nil
}

// runtimeOptions are the runtime settings of a connector. It runs with
// its effective config (Connect's keys translated); the stored one stays
// as given.
func (w *Worker) runtimeOptions(c *conn, paused bool) runtime.Options {
	mem := w.connectorMemory()
	c.mu.Lock()
	defer c.mu.Unlock()
	return runtime.Options{
		Name: c.name, Config: w.effective(c.config), Components: maps.Clone(c.comps),
		DataDir: w.cfg.DataDir, Plugins: w.plugins, Offsets: w.offsets, Statuses: w.statuses,
		Metrics: w.metrics.Connector(c.name), Logger: w.logger, Paused: paused, Tuning: w.deps.Tuning,
		MemoryBytes: mem,
	}
}

// startLocked starts the connector's runtime in its target state; c.op is
// held. A start that fails leaves the connector FAILED with the reason.
// The runtime runs on the worker's lifetime (w.life), not on the ctx of
// the request that started it.
//
//nolint:contextcheck // see above
func (w *Worker) startLocked(c *conn) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed || !w.runsHere(c.name) {
		return
	}
	c.mu.Lock()
	paused := c.target == store.TargetPaused
	c.mu.Unlock()
	opts := w.runtimeOptions(c, paused)
	if p := w.deps.Placement; p != nil {
		spec, _ := p.Share(c.name)
		link, err := p.Link(w.life, c.name)
		if err != nil {
			// Kafka away: the herder's next pass tries again.
			w.logger.Warn("cannot open the connector's control link; trying again at the next placement pass", "connector", c.name, "error", err)
			return
		}
		opts.Share = &runtime.Share{Worker: w.cfg.WorkerID, Tasks: spec.Tasks, Committer: spec.Committer, CommitterEpoch: spec.CommitterEpoch, Link: link}
		c.mu.Lock()
		c.share = spec
		c.mu.Unlock()
	}
	// The runtime lives until stopped or the worker closes, not as long
	// as a request.
	rt, err := runtime.Start(w.life, opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.rt, c.failure = nil, err.Error()
		w.logger.Error("connector could not start", "connector", c.name, "error", err)
		if opts.Share != nil {
			opts.Share.Link.Close()
		}
		return
	}
	c.rt, c.failure = rt, ""
	go w.watch(c, rt)
}

// stopLocked stops the runtime (final checkpoint and commit within ctx);
// c.op is held.
func (w *Worker) stopLocked(ctx context.Context, c *conn) error {
	c.mu.Lock()
	rt := c.rt
	c.rt = nil
	c.mu.Unlock()
	if rt == nil {
		return nil
	}
	err := rt.Stop(ctx)
	if err != nil && !errors.Is(err, runtime.ErrStopCutShort) {
		// A runtime that had failed reports its failure; the stop itself
		// went fine.
		w.logger.Info("stopped a connector that had failed", "connector", c.name, "error", err)
		return nil
	}
	return err
}
