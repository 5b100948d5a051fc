package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/floehq/floe/host/distributed"
	"github.com/floehq/floe/host/rest"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/host/store/kafkastore"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk/client"
)

type distributedOpts struct {
	log *logFlags
}

func distributedFlags(a *App) (*flag.FlagSet, *distributedOpts) {
	fs := newFlagSet("distributed")
	o := &distributedOpts{}
	o.log = addLogFlags(fs, a)
	return fs, o
}

func distributedCommand() *command {
	return &command{
		name:    "distributed",
		summary: "run a worker of a cluster: workers with one group.id share connectors",
		usage:   "distributed <worker.json>",
		help: `Runs one worker of a floe cluster until SIGINT or SIGTERM, as Kafka
Connect's connect-distributed does. Workers started with the same
group.id share the connectors: each connector runs on one worker, and
moves to another when its worker stops or dies (after session.timeout.ms).
Connector configs, statuses and offsets live on Kafka, in compacted topics
floe creates when missing.

The worker config is Kafka Connect's distributed worker keys
(bootstrap.servers, group.id, config.storage.topic, offset.storage.topic,
status.storage.topic, their .replication.factor and .partitions,
listeners, rest.advertised.*, security.protocol, sasl.*, ssl.*) plus
floe's worker keys (plugin.path, data.dir, worker.id, …); see
configs/distributed-worker.json and docs/distributed.md.

Every worker answers the REST API; writes are forwarded to the leader.`,
		flagSet: func(a *App) *flag.FlagSet { fs, _ := distributedFlags(a); return fs },
		run:     (*App).runDistributed,
	}
}

// runDistributed runs one cluster worker until ctx (the signal) ends,
// then stops its connectors (final commits) and leaves the cluster.
//
//nolint:contextcheck // the worker outlives ctx on purpose, as in runStandalone
func (a *App) runDistributed(ctx context.Context, args []string) error {
	fs, o := distributedFlags(a)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := argCount(pos, 1, 1, "the worker config file (for example configs/distributed-worker.json)"); err != nil {
		return err
	}
	if _, err := a.loggers(o.log); err != nil {
		return err
	}
	raw, err := loadRawWorkerConfig(pos[0])
	if err != nil {
		return err
	}
	dc, err := distributed.ParseConfig(raw, pos[0])
	if err != nil {
		return err
	}
	wc := dc.Worker
	logs, err := a.loggersTo(a.Stderr, o.log, wc.LogLevel)
	if err != nil {
		return err
	}
	log := logs.Logger(logCLI)
	start := time.Now()

	lock, err := store.LockDataDir(wc.DataDir)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Unlock() }()
	tlsConfig, auth, err := restSecurity(wc)
	if err != nil {
		return err
	}
	listeners, err := rest.Listen(wc.Listeners, tlsConfig)
	if err != nil {
		return err
	}
	// The REST API answers from here on: 503 until the worker has joined
	// the cluster and loaded the stored connectors.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	svc := a.serveREST(runCtx, listeners, auth, logs)
	stopServices := func() { stopRun(); svc.wait() }

	reg, err := a.scan(ctx, pluginSource{pluginPath: strings.Join(wc.PluginPath, ","), cacheDir: pluginCacheDir(wc)}, logs.Logger(logRegistry))
	if err != nil {
		log.Warn(err.Error())
	}
	ver, commit := version()
	info := kafkastore.WorkerInfo{Version: ver, Commit: commit}
	if reg != nil {
		for _, e := range reg.Components() {
			info.Plugins = append(info.Plugins, kafkastore.Plugin{Name: e.Component.Name, Kind: string(e.Component.Kind), Version: e.Component.Version})
		}
	}

	// The worker and the herder outlive ctx (the signal): shutdown needs
	// them for the final commits.
	wctx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorker()
	hlog := logs.Logger(logDistributed)
	log.Info("joining the cluster", "group.id", dc.Stores.GroupID, "worker_id", wc.WorkerID, "url", dc.URL)
	h, err := distributed.Open(ctx, dc, info, hlog)
	if err != nil {
		stopServices()
		return fmt.Errorf("join the cluster: %w", err)
	}
	configs, statuses, offsets := h.Stores()
	w, err := worker.New(wctx, wc, worker.Deps{
		Plugins: worker.FromRegistry(reg), Logger: logs.Logger(logWorker), Version: ver, Commit: commit,
		Stores: &worker.Stores{Configs: configs, Statuses: statuses, Offsets: offsets}, Placement: h,
	})
	if err != nil {
		stopServices()
		_ = h.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("start the worker: %w", err)
	}
	client.ReleaseStartupPages()

	failed := svc.open(runCtx, wc, w, h, auth, logs)
	herded := make(chan error, 1)
	go func() { herded <- h.Run(runCtx, w) }()
	log.Info("worker running", "worker_id", wc.WorkerID, "elapsed", time.Since(start).Round(time.Millisecond))

	var runErr error
	herdEnded := false
	select {
	case <-runCtx.Done():
	case runErr = <-failed:
	case runErr = <-herded:
		herdEnded = true
	}
	stopServices()
	if !herdEnded {
		if err := <-herded; runErr == nil && !errors.Is(err, context.Canceled) {
			runErr = err
		}
	}

	log.Info("shutting down: connectors make their final checkpoint commits, then the worker leaves the cluster")
	sctx, cancel := context.WithTimeout(wctx, wc.ShutdownTimeout)
	defer cancel()
	if err := w.Close(sctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("shutdown: %w (what was not committed is read again from the last commit by the worker that takes the connector over)", err)
	}
	if err := h.Close(sctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("leave the cluster: %w", err)
	}
	stopWorker()
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	log.Info("worker stopped", "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}
