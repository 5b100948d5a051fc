package runtime

import (
	"context"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Bounds of the wait between maintenance cycles, whatever the plugin asks.
const (
	minMaintenanceWait     = time.Second
	defaultMaintenanceWait = time.Minute
)

// maintain runs the maintenance plugin's cycles until ctx ends, in its own
// process: ingestion never waits for it. A crash restarts the process
// (the role) and reopens the task here; a failed cycle is logged and the
// next one comes after the usual wait.
func (c *Connector) maintain(ctx context.Context, r *role) {
	gen := 0
	for ctx.Err() == nil {
		proc, g, err := r.await(ctx, gen)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Error("maintenance stopped", "error", err)
				c.setMaintenance(nil, err)
			}
			return
		}
		gen = g
		t, err := proc.OpenMaintenance(ctx, client.MaintenanceOpen{
			Component: r.component, Connector: c.opts.Name, Config: c.pluginConfig(),
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !processGone(proc, err) {
				c.logger.Error("cannot open maintenance; retrying", "error", err)
				c.setMaintenance(nil, err)
				if !sleepCtx(ctx, defaultMaintenanceWait) {
					return
				}
			}
			continue
		}
		c.setMaintenance(t, nil)
		c.cycles(ctx, t, proc)
		c.setMaintenance(nil, nil)
		cctx, cancel := c.closeCtx(ctx)
		_ = t.Close(cctx)
		cancel()
	}
}

// cycles calls Cycle until ctx ends or the process dies.
func (c *Connector) cycles(ctx context.Context, t MaintenanceTask, proc Process) {
	for {
		res, err := t.Cycle(ctx, sdk.CycleRequest{})
		wait := res.Next
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if processGone(proc, err) {
				c.logger.Warn("maintenance process lost; reopening after its restart", "error", err)
				return
			}
			c.logger.Warn("maintenance cycle failed", "error", err)
		}
		for _, run := range res.Runs {
			if run.Error != "" {
				c.logger.Warn("maintenance task failed", "table", run.Table, "task", run.Task, "error", run.Error)
			} else {
				c.logger.Info("maintenance task ran", "table", run.Table, "task", run.Task, "trigger", run.Trigger,
					"duration", run.Duration, "files_before", run.FilesBefore, "files_after", run.FilesAfter)
			}
		}
		if wait <= 0 {
			wait = defaultMaintenanceWait
		}
		wait = max(wait, minMaintenanceWait)
		select {
		case <-ctx.Done():
			return
		case <-proc.Exited():
			return
		case <-time.After(wait):
		}
	}
}

func (c *Connector) setMaintenance(t MaintenanceTask, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maint, c.maintErr = t, err
}
