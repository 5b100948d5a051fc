package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/standalone"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Bounds of the wait between cycles when looping, whatever the plugin
// asks (the worker's own maintenance uses the same).
const (
	minCycleWait     = time.Second
	defaultCycleWait = time.Minute
)

type maintainOpts struct {
	src     pluginSource
	dataDir string
	once    bool
	dryRun  bool
	force   string
	json    bool
	log     *logFlags
}

func maintainFlags(a *App) (*flag.FlagSet, *maintainOpts) {
	fs := newFlagSet("maintain")
	o := &maintainOpts{}
	o.src.addFlags(fs)
	fs.StringVar(&o.dataDir, "data-dir", "", "data dir of the embedded catalog (default the --worker config's data.dir, else "+worker.DefaultDataDir+")")
	fs.BoolVar(&o.once, "once", false, "run one cycle and exit (for cron and other schedulers)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "plan and report, change nothing")
	fs.StringVar(&o.force, "force", "", "comma-separated tasks to run whatever their triggers say (rewrite-data-files, expire-snapshots, …)")
	fs.BoolVar(&o.json, "json", false, "print each cycle's runs as a JSON line")
	o.log = addLogFlags(fs, a)
	return fs, o
}

func maintainCommand() *command {
	return &command{
		name:    "maintain",
		summary: "run a connector's table maintenance alone, once or on its schedule",
		usage:   "maintain <connector.json> [--once] [--dry-run] [--force task,…] [--worker worker.json | --plugin-path DIR,…]",
		help: `Starts the maintenance plugin a connector names ("maintenance", e.g.
iceberg-maintenance) in its own process, without ingestion, and runs its
cycles: each looks at the tables, decides from its triggers what is due
(compaction, snapshot expiry, manifest rewrite, orphan cleanup) and runs
it. With --once it runs one cycle and exits; otherwise it runs the next
cycle when the plugin asks, until SIGINT or SIGTERM. Every run is printed;
floe exits 1 if a cycle or a run failed.

The connector's process.maintenance.cpus, .memory and .nice limits apply.`,
		flagSet: func(a *App) *flag.FlagSet { fs, _ := maintainFlags(a); return fs },
		run:     (*App).runMaintain,
	}
}

func (a *App) runMaintain(ctx context.Context, args []string) error {
	fs, o := maintainFlags(a)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := argCount(pos, 1, 1, "the connector file (floe maintain connector.json --once)"); err != nil {
		return err
	}
	if _, err := a.loggers(o.log); err != nil {
		return err
	}
	c, err := standalone.LoadConnector(pos[0])
	if err != nil {
		return err
	}
	component := strings.TrimSpace(c.Config[runtime.KeyMaintenance])
	if component == "" {
		return fmt.Errorf("connector %s (%s) names no maintenance plugin: set \"maintenance\": \"iceberg-maintenance\" in its config", c.Name, pos[0])
	}
	dataDir, logLevel := worker.DefaultDataDir, ""
	if o.src.worker != "" {
		wc, err := loadWorkerConfig(o.src.worker)
		if err != nil {
			return err
		}
		dataDir, logLevel = wc.DataDir, wc.LogLevel
	}
	if o.dataDir != "" {
		dataDir = o.dataDir
	}
	logs, err := a.loggersWithDefault(o.log, logLevel)
	if err != nil {
		return err
	}
	log := logs.Logger(logMaintain)
	settings, err := runtime.ParseSettings(c.Name, c.Config)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	reg, err := a.scan(ctx, o.src, logs.Logger(logRegistry))
	if err != nil {
		return err
	}
	entry, err := reg.Lookup(sdk.KindMaintenance, component)
	if err != nil {
		return fmt.Errorf("start maintenance plugin %s: %w", component, err)
	}
	lim := settings.Processes[sdk.KindMaintenance]
	proc, err := worker.FromRegistry(reg).Start(ctx, sdk.KindMaintenance, component, client.StartOptions{
		Env: lim.Env(), Nice: lim.Nice,
		Logger: logs.Logger(logMaintain), Labels: []any{"connector", c.Name, "plugin", component},
	})
	if err != nil {
		return fmt.Errorf("start maintenance plugin %s: %w", component, err)
	}
	defer proc.Kill()

	config := runtime.PluginConfig(entry.Component.Fields, c.Config, dataDir)
	task, err := proc.OpenMaintenance(ctx, client.MaintenanceOpen{Component: component, Connector: c.Name, Config: config})
	if err != nil {
		return fmt.Errorf("open maintenance of connector %s: %w", c.Name, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = task.Close(cctx)
	}()

	req := sdk.CycleRequest{Force: splitList(o.force, ","), DryRun: o.dryRun}
	failures := 0
	for cycle := 1; ; cycle++ {
		started := time.Now()
		res, err := task.Cycle(ctx, req)
		if ctx.Err() != nil {
			break // a signal ended the cycle: what it did not finish, it did not commit
		}
		if err != nil {
			failures++
			warnf(a.Stderr, "floe maintain: cycle %d failed: %v\n", cycle, err)
		}
		failed, err := printRuns(a.Stdout, cycle, started, res, o.json)
		if err != nil {
			return fmt.Errorf("print cycle %d: %w", cycle, err)
		}
		failures += failed
		if o.once {
			break
		}
		wait := res.Next
		if wait <= 0 {
			wait = defaultCycleWait
		}
		wait = max(wait, minCycleWait)
		log.Debug("next maintenance cycle", "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		case <-proc.Exited():
			return fmt.Errorf("maintenance plugin %s exited: %s", component, proc.ExitReason())
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failures > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d maintenance failure(s) for connector %s: see the runs above", failures, c.Name)}
	}
	return nil
}

// CycleReport is one cycle as `floe maintain --json` prints it.
type CycleReport struct {
	Cycle   int              `json:"cycle"`
	Started time.Time        `json:"started"`
	Runs    []MaintenanceRun `json:"runs"`
	// NextMs is when the plugin wants the next cycle, in milliseconds.
	NextMs int64 `json:"next_ms"`
}

// MaintenanceRun is one task run; the fields are the REST API's.
type MaintenanceRun = worker.MaintenanceRun

// printRuns prints a cycle's runs and returns how many failed.
func printRuns(w io.Writer, cycle int, started time.Time, res sdk.CycleResult, asJSON bool) (int, error) {
	failed := 0
	runs := make([]MaintenanceRun, 0, len(res.Runs))
	for _, r := range res.Runs {
		if r.Error != "" {
			failed++
		}
		runs = append(runs, worker.MaintenanceRunOf(r))
	}
	if asJSON {
		return failed, writeJSONLine(w, CycleReport{Cycle: cycle, Started: started.UTC(), Runs: runs, NextMs: res.Next.Milliseconds()})
	}
	p := newPrinter(w)
	p.printf("cycle %d at %s: %d run(s)", cycle, started.Format(time.TimeOnly), len(runs))
	if res.Next > 0 {
		p.printf("; next wanted in %s", res.Next.Round(time.Millisecond))
	}
	p.println()
	if len(runs) == 0 {
		p.println("  nothing was due")
	}
	for _, r := range runs {
		status := "ok"
		if r.Error != "" {
			status = "FAILED: " + r.Error
		}
		p.printf("  %s %s (%s): %s, files %d → %d, %s → %s, %s\n", r.Table, r.Task, r.Trigger, status,
			r.FilesBefore, r.FilesAfter, bytesIEC(r.BytesBefore), bytesIEC(r.BytesAfter), r.Duration.Round(time.Millisecond))
		if r.Detail != "" {
			p.printf("      %s\n", r.Detail)
		}
	}
	return failed, p.err
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
