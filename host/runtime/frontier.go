package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// ReadFrontier asks the sink of a connector that is not running for its
// frontier: it starts the sink plugin, opens the sink, reads the frontier,
// and closes both. A sink without a frontier (sdk.ErrUnsupported) answers
// with the offsets floe stored after its last commit. ctx bounds it all.
//
// Only opts' Name, Config, Components, DataDir, Plugins, Offsets and
// Logger are used.
func ReadFrontier(ctx context.Context, opts Options) (sdk.Frontier, error) {
	comp := opts.Components[sdk.KindSink].Name
	if comp == "" {
		return sdk.Frontier{}, fmt.Errorf("connector %s: no sink component", opts.Name)
	}
	set, err := ParseSettings(opts.Name, opts.Config)
	if err != nil {
		return sdk.Frontier{}, err
	}
	lim := set.Processes[sdk.KindSink]
	proc, err := opts.Plugins.Start(ctx, sdk.KindSink, comp, client.StartOptions{Env: lim.Env(), Nice: lim.Nice,
		Logger: opts.Logger, Labels: []any{"connector", opts.Name, "plugin", comp}})
	if err != nil {
		return sdk.Frontier{}, fmt.Errorf("connector %s: start the sink to read its frontier: %w", opts.Name, err)
	}
	defer proc.Kill()
	cfg := PluginConfig(opts.Components[sdk.KindSink].Fields, opts.Config, opts.DataDir)
	sink, err := proc.OpenSink(ctx, client.SinkOpen{Component: comp, Connector: opts.Name, Config: cfg, Writers: set.Tasks})
	if err != nil {
		return sdk.Frontier{}, fmt.Errorf("connector %s: open the sink to read its frontier: %w", opts.Name, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = sink.Close(cctx)
	}()
	fr, err := sinkFrontier(ctx, sink, opts.Offsets, opts.Name)
	if err != nil {
		return sdk.Frontier{}, fmt.Errorf("connector %s: %w", opts.Name, err)
	}
	return fr, nil
}

// sinkFrontier reads the open sink's frontier; a sink that keeps no
// positions (sdk.ErrUnsupported) answers with the offsets floe stored
// after the connector's last commit.
func sinkFrontier(ctx context.Context, sink SinkTask, offsets store.OffsetStore, name string) (sdk.Frontier, error) {
	fr, err := sink.Frontier(ctx)
	if errors.Is(err, sdk.ErrUnsupported) {
		cm, serr := offsets.Committed(ctx, name)
		if serr != nil && !errors.Is(serr, store.ErrNotFound) {
			return sdk.Frontier{}, fmt.Errorf("read committed offsets: %w", serr)
		}
		fr, err = sdk.Frontier{Positions: cm.Positions, Checkpoint: cm.Checkpoint}, nil
	}
	if err != nil {
		return sdk.Frontier{}, fmt.Errorf("read the sink's frontier: %w", err)
	}
	if fr.Positions == nil {
		fr.Positions = map[string]int64{}
	}
	return fr, nil
}

// Offsets returns the positions of the last commit (the sink's frontier as
// this runtime knows it) and its checkpoint id; ok is false before the
// sink's frontier was read. In a cluster a worker also knows the whole
// frontier each commit answer announced (the committer's commits of other
// workers' checkpoints): a partition shows the newer of the two.
func (c *Connector) Offsets() (positions map[string]int64, checkpoint uint64, ok bool) {
	c.mu.Lock()
	positions, checkpoint, ok = maps.Clone(c.committed), c.committedCkpt, c.haveCommitted
	c.mu.Unlock()
	if !ok || c.share == nil {
		return positions, checkpoint, ok
	}
	announced, _ := c.share.frontierAt()
	if positions == nil {
		positions = map[string]int64{}
	}
	for p, at := range announced {
		if at > positions[p] {
			positions[p] = at
		}
	}
	return positions, checkpoint, ok
}

func (c *Connector) setCommitted(pos map[string]int64, ckpt uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.committed, c.committedCkpt, c.haveCommitted = maps.Clone(pos), ckpt, true
}
