package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/floehq/floe/sdk"
)

// ProcessWithWaits is a [Process] whose sink component can say which
// services it is waiting for (sdk.SinkWithWaits). *client.Process through
// [WrapProcess] is one.
type ProcessWithWaits interface {
	Process
	SinkWaits(ctx context.Context, component, connector string) ([]sdk.ServiceWait, error)
}

func (c clientProcess) SinkWaits(ctx context.Context, component, connector string) ([]sdk.ServiceWait, error) {
	return c.p.SinkWaits(ctx, component, connector)
}

// waitsPoll is how often a running connector asks its sink what it is
// waiting for: the status shows an outage, and its end, within about
// this long.
const waitsPoll = time.Second

// watchWaits asks the sink process every waitsPoll, until ctx ends, which
// services it is waiting for, and keeps the answer for the status
// (Progress.Waits). Only the sink knows: during a catalog outage its
// Commit retries inside the plugin, and during an object-store outage its
// Open waits for the store, so no error reaches the host until the sink
// gives up. A sink that does not declare sdk.CapabilityWaits is not
// asked.
func (c *Connector) watchWaits(ctx context.Context, r *role) {
	comp := c.opts.Components[sdk.KindSink]
	if !comp.Has(sdk.CapabilityWaits) {
		return
	}
	defer c.progress.setWaits(nil)
	t := time.NewTicker(waitsPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		proc, ok := r.current().(ProcessWithWaits)
		if !ok {
			// Between sink processes: the new one says again.
			c.progress.setWaits(nil)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, waitsPoll)
		waits, err := proc.SinkWaits(cctx, comp.Name, c.opts.Name)
		cancel()
		switch {
		case errors.Is(err, sdk.ErrUnsupported):
			c.logger.Warn("the sink declares the waits capability but does not answer Waits; its status will not say what it waits for", "error", err)
			return
		case err != nil:
			// A busy or restarting process: keep the last answer, the
			// next poll corrects it.
			continue
		}
		c.progress.setWaits(waits)
	}
}
