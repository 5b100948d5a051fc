package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// partitionerHolder keeps the connector's partitioner task open across
// partitioner process restarts. Every pipeline shares it.
type partitionerHolder struct {
	c *Connector

	mu   sync.Mutex
	task PartitionerTask
	proc Process
	gen  int // generation of the process task was opened on
}

// get returns the open partitioner, opening it on first use.
func (h *partitionerHolder) get(ctx context.Context) (PartitionerTask, Process, int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.task != nil {
		return h.task, h.proc, h.gen, nil
	}
	if err := h.openLocked(ctx, 0); err != nil {
		return nil, nil, 0, err
	}
	return h.task, h.proc, h.gen, nil
}

// reopen replaces a partitioner whose process (generation failedGen)
// died, waiting for the restarted process. Concurrent callers for the
// same failure reopen it once.
func (h *partitionerHolder) reopen(ctx context.Context, failedGen int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.task != nil && h.gen != failedGen {
		return nil
	}
	h.task = nil
	return h.openLocked(ctx, failedGen)
}

func (h *partitionerHolder) openLocked(ctx context.Context, after int) error {
	r := h.c.roles[sdk.KindPartitioner]
	for {
		proc, gen, err := r.await(ctx, after)
		if err != nil {
			return err
		}
		t, err := proc.OpenPartitioner(ctx, client.PartitionerOpen{
			Component: r.component,
			Connector: h.c.opts.Name,
			Config:    h.c.pluginConfig(sdk.KindPartitioner),
			Writers:   h.c.settings.Tasks,
		})
		if err != nil {
			if ctx.Err() == nil && processGone(proc, err) {
				after = gen
				continue
			}
			return fmt.Errorf("open partitioner: %w", err)
		}
		h.task, h.proc, h.gen = t, proc, gen
		return nil
	}
}

func (h *partitionerHolder) close(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.task != nil {
		if err := h.task.Close(ctx); err != nil {
			h.c.logger.Warn("closing the partitioner", "error", err)
		}
		h.task = nil
	}
}
