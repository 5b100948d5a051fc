package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// Version is the maintenance plugin's version.
const Version = "0.1.0"

// Component returns the iceberg-maintenance component.
func Component() sdk.Component { return newComponent(openSharedCatalog) }

// newComponent builds the component over a catalog opener (tests hand in
// their own catalog).
func newComponent(open catalogOpener) sdk.Component {
	return sdk.Component{
		Name:        "iceberg-maintenance",
		Version:     Version,
		Summary:     "Keeps a connector's Iceberg tables fast to query: compaction, manifest rewrite, snapshot expiry, orphan and old-metadata cleanup, driven by a table monitor and thresholds, in its own process.",
		Spec:        Spec(),
		Maintenance: &plugin{open: open},
	}
}

// plugin implements sdk.Maintenance.
type plugin struct {
	open catalogOpener
}

// Open reads the config, opens the catalog, the lock store and the run
// history. It does not look at the tables: the first Cycle does.
func (p *plugin) Open(ctx context.Context, req sdk.MaintenanceOpenRequest) (sdk.MaintenanceTask, error) {
	log := req.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := parseSettings(req.Connector, req.Config)
	if err != nil {
		return nil, err
	}
	conn, err := p.open(ctx, req.Config.Map())
	if err != nil {
		return nil, err
	}
	t, err := newTask(ctx, s, conn, log)
	if err != nil {
		_ = conn.close()
		return nil, err
	}
	log.Info("maintenance opened", "tables", strings.Join(s.tables, ","), "dynamic", s.dynamic,
		"poll_interval", s.pollInterval, "locks", t.lockKind, "history", t.hist.path)
	return t, nil
}

func newTask(ctx context.Context, s settings, conn catalogConn, log *slog.Logger) (*task, error) {
	conn.cat = withReplay(conn.cat)
	hist, err := openHistory(lake.MaintenanceHistoryPath(s.dataDir, s.connector), s.historyRuns)
	if err != nil {
		return nil, err
	}
	var store lockStore
	kind := ""
	switch {
	case conn.db != nil:
		store, err = newSQLLocks(ctx, conn.db, conn.dialect, s.catalogName)
		kind = "table " + lockTable + " in the catalog database"
	case s.dataDir != "":
		dir := filepath.Join(s.dataDir, "maintenance", "locks")
		store, err = newFileLocks(dir)
		kind = "files in " + dir
	default:
		err = fmt.Errorf("iceberg-maintenance: %s is not set: the lock files of a catalog without a database live there", keyDataDir)
	}
	if err != nil {
		return nil, err
	}
	owner := newOwner(s.connector)
	return &task{
		s: s, conn: conn, log: log, hist: hist, mon: newMonitor(), owner: owner, lockKind: kind,
		locks: &locker{store: store, owner: owner, ttl: s.lockLease, log: log},
		retry: retrier{cat: conn.cat, maxAttempts: s.maxAttempts},
		seams: defaultSeams(),
	}, nil
}

// seams are the calls of a run that tests replace to hold it at a known
// point; a task uses defaultSeams.
type seams struct {
	// compact reads a group's files and writes them back at the target
	// size.
	compact compactFunc
	// ticker starts the ticks of a run's re-plans: a channel and the
	// function that stops it.
	ticker func(every time.Duration) (<-chan time.Time, func())
}

func defaultSeams() seams {
	return seams{
		compact: table.ExecuteCompactionGroup,
		ticker: func(every time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(every)
			return t.C, t.Stop
		},
	}
}

// runEnv is what one task run gets.
type runEnv struct {
	s     settings
	cat   catalog.Catalog
	retry retrier
	log   *slog.Logger
	owner string
	// ch is the monitor's view of the table, loaded after the lock was
	// taken.
	ch     TableChange
	dryRun bool
	// forced is a run asked for by name (floe maintain --force): the
	// task does its full job (compaction bin-packs every small file).
	forced bool
	now    time.Time
	seams
}

// outcome is what a task run did. Files and bytes mean, per task:
// rewrite-data-files: the table's data files; rewrite-manifests: the
// current snapshot's manifests; expire-snapshots: snapshots, and the
// metadata.json size; delete-orphan-files: orphan files found and left;
// delete-metadata-files: metadata.json files.
type outcome struct {
	filesBefore, filesAfter, bytesBefore, bytesAfter int64
	detail                                           string
}

type taskFunc func(ctx context.Context, env runEnv) (outcome, error)

var taskFuncs = map[string]taskFunc{
	taskRewriteData:      rewriteData,
	taskRewriteManifests: rewriteManifests,
	taskExpire:           expireSnapshots,
	taskMetadataFiles:    deleteMetadataFiles,
	taskOrphans:          deleteOrphans,
}

// task is one connector's maintenance (sdk.MaintenanceTask). Cycle runs
// one at a time; Status may run beside it.
type task struct {
	s        settings
	conn     catalogConn
	log      *slog.Logger
	hist     *history
	mon      *monitor
	locks    *locker
	retry    retrier
	owner    string
	lockKind string
	seams    seams

	cycleMu   sync.Mutex
	closeOnce sync.Once
	closeErr  error
}

// Cycle monitors every table, asks the trigger manager what is due, and
// runs it under the per-table, per-task lock, tables one after the other
// and tasks in a fixed order (compaction, manifests, expiry, metadata,
// orphans). req.Force runs the named tasks whatever their triggers and
// min intervals say (even when disabled); req.DryRun plans and reports
// without committing or deleting, takes no lock and does not count as a
// run for the triggers. A task that fails is a run with its Error set;
// Cycle itself fails only when it cannot list the tables.
func (t *task) Cycle(ctx context.Context, req sdk.CycleRequest) (sdk.CycleResult, error) {
	t.cycleMu.Lock()
	defer t.cycleMu.Unlock()
	res := sdk.CycleResult{Next: t.s.pollInterval}
	force := map[string]bool{}
	for _, f := range req.Force {
		f = strings.TrimSpace(f)
		switch {
		case f == "all":
			for _, name := range allTasks {
				force[name] = true
			}
		case slices.Contains(allTasks, f):
			force[f] = true
		case f != "":
			return res, fmt.Errorf("iceberg-maintenance: unknown task %q to force (tasks: %s, or all)", f, strings.Join(allTasks, ", "))
		}
	}
	names, err := resolveTables(ctx, t.conn.cat, t.s)
	if err != nil {
		return res, fmt.Errorf("iceberg-maintenance: %w", err)
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		ch, err := t.mon.observe(ctx, t.conn.cat, t.s, name, !req.DryRun)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			t.log.Debug("table does not exist yet", "table", name)
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				res.Runs = append(res.Runs, t.record(runRecord{Table: name, Task: "monitor", Started: time.Now(), Error: err.Error()}))
			}
			continue
		}
		for _, taskName := range allTasks {
			if ctx.Err() != nil {
				break
			}
			run, ran := t.maybeRun(ctx, taskName, ch, force[taskName], req.DryRun)
			if !ran {
				continue
			}
			res.Runs = append(res.Runs, run)
			if !req.DryRun {
				// The next task decides on the table as this one left it.
				if fresh, err := t.mon.observe(ctx, t.conn.cat, t.s, name, false); err == nil {
					ch = fresh
				}
			}
		}
		res.Tables = append(res.Tables, ch.Health())
	}
	return res, nil
}

// maybeRun asks the trigger manager about one task, and runs it under its
// lock when it is due. ran is false when the task was not due or another
// instance holds its lock.
func (t *task) maybeRun(ctx context.Context, name string, ch TableChange, forced, dry bool) (sdk.TaskRun, bool) {
	if !forced && !t.s.enabled[name] {
		return sdk.TaskRun{}, false
	}
	th := t.s.triggers[name]
	trigger := "forced"
	if !forced {
		d := decide(th, ch, t.hist.lastRun(ch.Table, name), time.Now())
		if !d.due {
			t.log.Debug("not due", "table", ch.Table, "task", name, "reason", d.reason)
			return sdk.TaskRun{}, false
		}
		trigger = d.reason
	}
	runCtx := ctx
	if !dry {
		held, release, holder, err := t.locks.acquire(ctx, lockKey{ch.Table, name})
		if err != nil {
			return t.record(runRecord{Table: ch.Table, Task: name, Trigger: trigger, Started: time.Now(), Error: err.Error()}), true
		}
		if held == nil {
			t.log.Info("skipped: another maintenance instance runs this task on this table", "table", ch.Table, "task", name, "holder", holder)
			return sdk.TaskRun{}, false
		}
		defer release()
		runCtx = held
		// Decide again on the table as it is now that the lock is ours: the
		// holder before us may have done the work already.
		fresh, err := t.mon.observe(runCtx, t.conn.cat, t.s, ch.Table, false)
		if err != nil {
			return t.record(runRecord{Table: ch.Table, Task: name, Trigger: trigger, Started: time.Now(), Error: err.Error()}), true
		}
		ch = fresh
		if !forced {
			d := decide(th, ch, t.hist.lastRun(ch.Table, name), time.Now())
			if !d.due {
				t.log.Debug("no longer due once locked", "table", ch.Table, "task", name, "reason", d.reason)
				return sdk.TaskRun{}, false
			}
			trigger = d.reason
		}
	}
	started := time.Now()
	env := runEnv{s: t.s, cat: t.conn.cat, retry: t.retry, log: t.log, owner: t.owner, ch: ch, dryRun: dry, forced: forced, now: started, seams: t.seams}
	replays := replayCount(t.conn.cat)
	out, err := taskFuncs[name](runCtx, env)
	if n := replayCount(t.conn.cat) - replays; n > 0 {
		out.detail += fmt.Sprintf(" (%d commit(s) replayed on a moved table)", n)
	}
	if err == nil && errors.Is(context.Cause(runCtx), errLockLost) {
		err = errLockLost
	}
	rec := runRecord{Table: ch.Table, Task: name, Trigger: trigger, Started: started.UTC(), DurationMs: time.Since(started).Milliseconds(),
		FilesBefore: out.filesBefore, FilesAfter: out.filesAfter, BytesBefore: out.bytesBefore, BytesAfter: out.bytesAfter,
		Detail: out.detail, DryRun: dry}
	if err != nil {
		rec.Error = err.Error()
		if cause := context.Cause(runCtx); cause != nil && !errors.Is(err, cause) {
			rec.Error += " (" + cause.Error() + ")"
		}
	}
	return t.record(rec), true
}

// record keeps a run in the history and logs it.
func (t *task) record(r runRecord) sdk.TaskRun {
	for _, v := range []*int64{&r.FilesBefore, &r.FilesAfter, &r.BytesBefore, &r.BytesAfter} {
		*v = max(*v, 0)
	}
	if err := t.hist.add(r); err != nil {
		t.log.Warn("cannot write the maintenance history", "error", err)
	}
	attrs := []any{"table", r.Table, "task", r.Task, "trigger", r.Trigger, "duration", time.Duration(r.DurationMs) * time.Millisecond,
		"files_before", r.FilesBefore, "files_after", r.FilesAfter, "bytes_before", r.BytesBefore, "bytes_after", r.BytesAfter,
		"dry_run", r.DryRun, "detail", r.Detail}
	if r.Error != "" {
		t.log.Warn("maintenance run failed", append(attrs, "error", r.Error)...)
	} else {
		t.log.Info("maintenance run", attrs...)
	}
	return r.TaskRun()
}

// Status reports each table's health, measured now from its metadata
// (without moving the monitor's cursor), and the recent runs, oldest
// first. It may run while a Cycle does.
func (t *task) Status(ctx context.Context) (sdk.MaintenanceStatus, error) {
	names, err := resolveTables(ctx, t.conn.cat, t.s)
	if err != nil {
		return sdk.MaintenanceStatus{}, fmt.Errorf("iceberg-maintenance: %w", err)
	}
	var st sdk.MaintenanceStatus
	for _, name := range names {
		ch, err := t.mon.observe(ctx, t.conn.cat, t.s, name, false)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			continue
		}
		if err != nil {
			return sdk.MaintenanceStatus{}, fmt.Errorf("iceberg-maintenance: %w", err)
		}
		st.Tables = append(st.Tables, ch.Health())
	}
	st.Runs = t.hist.recent()
	return st, nil
}

// Close releases the catalog. A run still going is cut short by its
// context, not here.
func (t *task) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		if t.conn.close != nil {
			t.closeErr = t.conn.close()
		}
	})
	return t.closeErr
}
