package runtime

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
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
			Component: r.component, Connector: c.opts.Name, Config: c.pluginConfig(sdk.KindMaintenance),
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

// maintainWhileCommitting runs maintenance, in a cluster, on the worker
// that holds the connector's committer: it starts the maintenance process
// when the committer comes here and ends it when the committer leaves, so
// that one maintenance runs per connector and moves with the committer.
func (c *Connector) maintainWhileCommitting(ctx context.Context, component string) {
	for {
		committer, _, changed := c.share.role()
		for !committer {
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
			committer, _, changed = c.share.role()
		}
		mctx, cancel := context.WithCancel(ctx)
		r := newRole(c, sdk.KindMaintenance, component)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.supervise(mctx) }()
		go func() { defer wg.Done(); c.maintain(mctx, r) }()
		for committer {
			select {
			case <-changed:
				committer, _, changed = c.share.role()
			case <-ctx.Done():
				committer = false
			}
		}
		cancel()
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		c.logger.Info("maintenance stopped here: the connector's committer moved to another worker")
	}
}

// cycles calls Cycle until ctx ends or the process dies, and records the
// runs and the tables' health for the status and the metrics.
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
			c.metrics.MaintenanceRun(run)
		}
		c.maintLog.add(res.Runs)
		for _, h := range res.Tables {
			c.metrics.TableHealth(h)
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

// maintenanceLog is what the maintenance plugin's cycles did since the
// connector started, for its status; safe for concurrent use.
type maintenanceLog struct {
	mu           sync.Mutex
	runs, failed int64
	last         map[[2]string]sdk.TaskRun // by table and task
}

func (l *maintenanceLog) add(runs []sdk.TaskRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range runs {
		l.runs++
		if r.Error != "" {
			l.failed++
		}
		if l.last == nil {
			l.last = map[[2]string]sdk.TaskRun{}
		}
		l.last[[2]string{r.Table, r.Task}] = r
	}
}

// summary returns the counts and the latest run of each task on each
// table, by table and then task.
func (l *maintenanceLog) summary() MaintenanceProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := MaintenanceProgress{Runs: l.runs, FailedRuns: l.failed}
	for _, r := range l.last {
		p.LastRuns = append(p.LastRuns, r)
	}
	slices.SortFunc(p.LastRuns, func(a, b sdk.TaskRun) int {
		return cmp.Or(strings.Compare(a.Table, b.Table), strings.Compare(a.Task, b.Task))
	})
	return p
}
