package iceberg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// tableWork is one table's share of a checkpoint: the writers' file
// groups and notes.
type tableWork struct {
	name    string
	groups  []fileGroup
	notes   tableNotes
	records int64
	files   int
}

// Commit registers a checkpoint's files with one commit per table (phase
// 2), in table-name order. Each commit's snapshot summary carries the
// connector, the checkpoint and the table's cumulative frontier
// (summary.go). Before committing a table the committer fences (see
// fence): nothing is committed to a table the checkpoint does not
// continue, and the error wraps ErrFenced. Every table is checked before
// any is committed, so a fenced checkpoint normally commits nothing.
//
// Conflicts with other writers (a stale base: the SQL catalog's
// "requirement failed: branch main has changed", or
// table.ErrCommitFailed) reload the table, fence again and retry with the
// same files, up to iceberg.commit.retry.max-attempts. A table that
// already holds the checkpoint is skipped, not committed twice: an
// earlier attempt's answer was lost, or the host retries a Commit that
// failed (or whose process died) after earlier tables committed, as
// sdk.SinkTask's contract allows (check, committedAs). A table without files gets no commit; its frontier
// moves on in memory, so that its next commit continues it.
//
// While the catalog or the object store is unavailable (unavailable.go)
// each table's commit waits and retries within
// iceberg.commit.retry.transient-timeout-ms, apart from the conflict
// budget. Errors are marked sdk.Transient or sdk.Permanent where the
// cause is known (classify).
func (t *task) Commit(ctx context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	out, err := t.commit(ctx, req)
	return out, classify(err)
}

func (t *task) commit(ctx context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	if err := t.closedErr(); err != nil {
		return nil, err
	}
	work, err := gather(req)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(work))

	// Check every table first.
	bases := map[string]base{}
	states := map[string]*tableState{}
	for _, name := range names {
		var o outage
		for {
			st, err := t.tableForCommit(ctx, name)
			var b base
			if err == nil {
				b, err = t.check(ctx, st, base{tbl: st.cached()}, req, work[name])
			}
			if err != nil && unavailable(err) && ctx.Err() == nil {
				if err := t.ride(ctx, &o, name, req.Checkpoint, err); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			bases[name], states[name] = b, st
			break
		}
	}

	var out []sdk.TableCommit
	touched := map[*tableState]bool{}
	for _, name := range names {
		w, st := work[name], states[name]
		touched[st] = true
		if len(w.groups) == 0 {
			// Rows seen and all dropped: nothing to commit, but the
			// frontier moves on.
			st.extend(req.Ranges, w.notes)
			continue
		}
		tc, err := t.commitTable(ctx, st, bases[name], req, w)
		if err != nil {
			return out, err
		}
		out = append(out, tc)
	}

	// Tables that got nothing this checkpoint held nothing of its ranges.
	t.mu.RLock()
	all := slices.Collect(maps.Values(t.tables))
	t.mu.RUnlock()
	for _, st := range all {
		if !touched[st] {
			st.extend(req.Ranges, tableNotes{})
		}
	}
	// Every table answered: no wait is left (one found committed
	// already, say, ends a wait its lost answer began).
	t.waits.answered(t.connector)
	return out, nil
}

// gather decodes the writers' payloads and groups them by table.
func gather(req sdk.CommitRequest) (map[string]*tableWork, error) {
	work := map[string]*tableWork{}
	for _, r := range req.Results {
		if len(r.Payload) == 0 {
			continue
		}
		p, err := decodePayload(r.Payload)
		if err != nil {
			return nil, err
		}
		// One commit may carry several flushed checkpoints (a cluster's
		// workers); each result names its own.
		want := req.Checkpoint
		if r.Checkpoint != 0 {
			want = r.Checkpoint
		}
		if p.Checkpoint != want {
			return nil, fmt.Errorf("iceberg sink: writer %d's result is of checkpoint %d, not %d", r.Writer, p.Checkpoint, want)
		}
		for _, tp := range p.Tables {
			w := work[tp.Table]
			if w == nil {
				w = &tableWork{name: tp.Table}
				work[tp.Table] = w
			}
			w.notes.add(tp)
			for _, g := range tp.Groups {
				w.groups = append(w.groups, g)
				w.records += g.Records
				w.files += len(g.Files)
			}
		}
	}
	return work, nil
}

// tableForCommit returns the state of a table written by some writer,
// maybe of another process.
func (t *task) tableForCommit(ctx context.Context, name string) (*tableState, error) {
	if st := t.knownTable(name); st != nil {
		return st, nil
	}
	t.structMu.Lock()
	defer t.structMu.Unlock()
	st, err := t.loadTableLocked(ctx, name)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("iceberg sink: table %s: %w (it was dropped after its files were written)", name, errNoTable)
	}
	return st, nil
}

// committerFrontier returns the table's frontier for fencing. When the
// connector's newest snapshot is still the one the committer knows, that
// is the in-memory frontier (which includes checkpoints that brought the
// table no rows); otherwise someone else committed meanwhile and the
// table's own summary is the truth.
//
// A pending offset override replaces the table's own frontier.
func (st *tableState) committerFrontier(h history, reset *offsetsReset) map[string]int64 {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if h.newest.snapshotID == st.headID && st.frontier != nil {
		return maps.Clone(st.frontier)
	}
	if reset.appliesTo(h) {
		return reset.positions()
	}
	return h.newest.offsets
}

// extend moves the in-memory frontier over a checkpoint that brought the
// table no files. Ranges that would leave a gap are not applied: the
// table's next commit then fails its fencing.
func (st *tableState) extend(ranges []sdk.Range, notes tableNotes) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.frontier == nil {
		return
	}
	for _, r := range ranges {
		f, ok := st.frontier[r.Partition]
		if !ok || notes.mixed[r.Partition] {
			continue
		}
		ok = r.From <= f
		for _, w := range notes.floors[r.Partition] {
			start := r.From
			if w.hasFloor && w.floor > start {
				start = w.floor
			}
			ok = ok && start == f
		}
		if ok {
			st.frontier[r.Partition] = max(f, r.Next)
		}
	}
}

// base is the table a commit attempt plans on.
type base struct {
	tbl *table.Table
	// fresh: loaded from the catalog for this attempt, not the table as
	// the task last knew it (which is right as long as no one else
	// committed, and saves a metadata read per commit).
	fresh bool
	h     history
	// done is the snapshot that already holds the checkpoint, if any.
	done   int64
	isDone bool
	next   map[string]int64 // the frontier after the commit
}

// check plans a commit of a table: finds whether the checkpoint is
// already in the table and fences its id and its ranges. A table the
// task knew (not fresh) is reloaded before a fencing error is believed.
func (t *task) check(ctx context.Context, st *tableState, b base, req sdk.CommitRequest, w *tableWork) (base, error) {
	for {
		if b.tbl == nil {
			tbl, err := t.cat.LoadTable(ctx, st.ident)
			if err != nil {
				return b, fmt.Errorf("iceberg sink: load table %s: %w", st.name, err)
			}
			b = base{tbl: tbl, fresh: true}
		}
		h, err := walkHistory(b.tbl, t.connector, req.Checkpoint)
		if err != nil {
			return b, fmt.Errorf("iceberg sink: table %s: %w", st.name, err)
		}
		b.h = h
		if b.done, b.isDone, err = t.committedAs(ctx, b.tbl, h, req.Checkpoint, w); err != nil {
			return b, fmt.Errorf("iceberg sink: table %s: %w", st.name, err)
		}
		if b.isDone {
			return b, nil
		}
		err = fenceCheckpoint(st.name, h, req.Checkpoint)
		if err == nil {
			b.next, err = fence(st.name, st.committerFrontier(h, t.reset), req.Ranges, w.notes)
		}
		if err != nil && !b.fresh {
			b.tbl = nil
			continue
		}
		return b, err
	}
}

// commitTable commits one table's files of a checkpoint, retrying on
// conflicts. b is the first attempt's plan.
func (t *task) commitTable(ctx context.Context, st *tableState, b base, req sdk.CommitRequest, w *tableWork) (_ sdk.TableCommit, err error) {
	tc := sdk.TableCommit{Table: st.name, Records: w.records, Files: w.files, Attempts: 1}
	wait := t.backoff()
	var clk commitClock
	var down outage
	defer func() { clk.report(t, st.name, req.Checkpoint, tc, err) }()
	// ride waits out an unavailable catalog or object store; the next
	// attempt reloads the table.
	ride := func(err error) error {
		start := time.Now()
		defer func() { clk.backoff += time.Since(start) }()
		return t.ride(ctx, &down, st.name, req.Checkpoint, err)
	}
	var lastErr error
	for {
		if b.tbl == nil {
			var err error
			start := time.Now()
			b, err = t.check(ctx, st, b, req, w)
			clk.load += time.Since(start)
			if err != nil && unavailable(err) && ctx.Err() == nil {
				if err := ride(err); err != nil {
					return tc, err
				}
				b = base{}
				continue
			}
			if err != nil {
				return tc, err
			}
		}
		if b.isDone {
			// Committed already: by an earlier attempt whose answer was
			// lost, or by an earlier Commit call the host retries.
			tc.SnapshotID = b.done
			st.committed(b.tbl, b.h.checkpoints[req.Checkpoint])
			t.log.Info("checkpoint already committed", "table", st.name, "checkpoint", req.Checkpoint, "snapshot", b.done)
			return tc, nil
		}
		if lastErr != nil && !retryable(lastErr) {
			return tc, fmt.Errorf("iceberg sink: table %s: commit checkpoint %d: %w", st.name, req.Checkpoint, lastErr)
		}

		files, err := decodeFiles(b.tbl, w.groups)
		if err != nil {
			return tc, fmt.Errorf("iceberg sink: table %s: %w", st.name, err)
		}
		epoch := b.h.newest.epoch
		if b.h.newest.committer != t.committerID {
			epoch++
		}
		props, err := summaryProps(t.connector, req.Checkpoint, b.next, t.committerID, epoch)
		if err != nil {
			return tc, err
		}
		if t.reset.appliesTo(b.h) {
			props[summaryReset] = "true"
		}
		txn := b.tbl.NewTransaction()
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			return tc, fmt.Errorf("iceberg sink: table %s: %w", st.name, err)
		}
		start := time.Now()
		err = txn.AddDataFiles(ctx, files, icebergapi.Properties(props), table.WithoutDuplicateCheck())
		clk.manifests += time.Since(start)
		if err != nil && unavailable(err) && ctx.Err() == nil {
			// Writing the manifests to the object store failed.
			if err := ride(err); err != nil {
				return tc, err
			}
			b = base{}
			continue
		}
		if err != nil {
			return tc, fmt.Errorf("iceberg sink: table %s: add data files: %w", st.name, err)
		}
		if t.beforeCommit != nil {
			if err := t.beforeCommit(st.name, tc.Attempts); err != nil {
				return tc, err
			}
		}
		sdk.CrashPoint("iceberg.commit.before-catalog") // crash tests: staged, not yet in the catalog
		start = time.Now()
		committed, err := txn.Commit(ctx)
		clk.catalog += time.Since(start)
		if err == nil {
			sdk.CrashPoint("iceberg.commit.after-catalog") // crash tests: in the catalog, the host not told
			// The catalog and the object store both answered.
			t.waits.answered(t.connector)
			snap := committed.CurrentSnapshot()
			tc.SnapshotID = snap.SnapshotID
			st.committed(committed, floeCommit{snapshotID: snap.SnapshotID, checkpoint: req.Checkpoint,
				offsets: b.next, committer: t.committerID, epoch: epoch})
			return tc, nil
		}
		stale := !b.fresh
		// Whether or not the error is a conflict, the commit's fate may be
		// unknown: reload and look before anything else.
		b = base{}
		if unavailable(err) && ctx.Err() == nil {
			// Not a conflict: no attempt is spent on it.
			if err := ride(err); err != nil {
				return tc, err
			}
			continue
		}
		if stale && retryable(err) {
			// Planned on the table as the task knew it, and someone
			// committed since: not a contended attempt, replan at once.
			continue
		}
		lastErr = err
		if tc.Attempts >= t.cfg.retryAttempts {
			return tc, fmt.Errorf("iceberg sink: table %s: commit checkpoint %d failed after %d attempts: %w", st.name, req.Checkpoint, tc.Attempts, err)
		}
		t.log.Warn("table commit conflict, retrying", "table", st.name, "checkpoint", req.Checkpoint, "attempt", tc.Attempts, "error", err)
		tc.Attempts++
		if retryable(err) {
			start := time.Now()
			err := wait.wait(ctx)
			clk.backoff += time.Since(start)
			if err != nil {
				return tc, err
			}
		}
	}
}

// slowCommit is the table commit duration past which the sink logs where
// the time went.
const slowCommit = 500 * time.Millisecond

// commitClock splits a table commit's time into its phases.
type commitClock struct {
	load      time.Duration // loading the table, walking its history, fencing
	manifests time.Duration // writing the manifest, merging manifests, the manifest list
	catalog   time.Duration // the catalog's compare-and-swap and metadata.json
	backoff   time.Duration // waiting between contended attempts
}

// report logs a commit slower than slowCommit, phase by phase, so a slow
// tail can be told apart: a reload after a concurrent commit
// (maintenance), a manifest merge, a slow catalog.
func (c commitClock) report(t *task, table string, checkpoint uint64, tc sdk.TableCommit, err error) {
	total := c.load + c.manifests + c.catalog + c.backoff
	if total < slowCommit {
		return
	}
	t.log.Info("slow table commit", "table", table, "checkpoint", checkpoint, "took", total.Round(time.Millisecond),
		"attempts", tc.Attempts, "load", c.load.Round(time.Millisecond), "manifests", c.manifests.Round(time.Millisecond),
		"catalog", c.catalog.Round(time.Millisecond), "backoff", c.backoff.Round(time.Millisecond), "files", tc.Files, "failed", err != nil)
}

// committedAs finds the snapshot that already holds a checkpoint's commit
// to a table: the connector's commit of that checkpoint id, made by this
// committer or adding exactly these files. A commit of the same id by
// another committer with other files is a zombie's (or the live one's,
// when this committer is the zombie): fencing then decides.
func (t *task) committedAs(ctx context.Context, tbl *table.Table, h history, checkpoint uint64, w *tableWork) (int64, bool, error) {
	c, ok := h.checkpoints[checkpoint]
	if !ok {
		return 0, false, nil
	}
	if c.committer == t.committerID {
		return c.snapshotID, true, nil
	}
	if len(w.groups) == 0 {
		return 0, false, nil
	}
	files, err := decodeFiles(tbl, w.groups)
	if err != nil {
		return 0, false, err
	}
	added, err := addedFiles(ctx, tbl, c.snapshotID)
	if err != nil {
		return 0, false, err
	}
	if len(added) != len(files) {
		return 0, false, nil
	}
	for _, df := range files {
		if !added[df.FilePath()] {
			return 0, false, nil
		}
	}
	return c.snapshotID, true, nil
}

// addedFiles returns the paths of the data files a snapshot added.
func addedFiles(ctx context.Context, tbl *table.Table, snapshotID int64) (map[string]bool, error) {
	snap := tbl.SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d not found", snapshotID)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: read manifest list: %w", snapshotID, err)
	}
	out := map[string]bool{}
	for _, mf := range manifests {
		if mf.ManifestContent() != icebergapi.ManifestContentData || !mf.HasAddedFiles() {
			continue
		}
		for e, err := range mf.Entries(fsys, true) {
			if err != nil {
				return nil, fmt.Errorf("snapshot %d: read manifest %s: %w", snapshotID, mf.FilePath(), err)
			}
			if e.Status() == icebergapi.EntryStatusADDED && e.SnapshotID() == snapshotID {
				out[e.DataFile().FilePath()] = true
			}
		}
	}
	return out, nil
}

func decodeFiles(tbl *table.Table, groups []fileGroup) ([]icebergapi.DataFile, error) {
	var files []icebergapi.DataFile
	for _, g := range groups {
		dfs, err := g.decode(tbl)
		if err != nil {
			return nil, err
		}
		files = append(files, dfs...)
	}
	return files, nil
}

// cached returns the table as the task last knew it.
func (st *tableState) cached() *table.Table {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.tbl
}

// committed records a commit of the connector in the table.
func (st *tableState) committed(tbl *table.Table, c floeCommit) {
	_ = st.setTable(tbl) // the schema did not change; a failure only means a stale target
	st.mu.Lock()
	defer st.mu.Unlock()
	st.headID = c.snapshotID
	st.frontier = maps.Clone(c.offsets)
	st.committer = c.committer
	st.epoch = c.epoch
}

// retryable reports whether a commit error is an optimistic-concurrency
// conflict worth a reload and retry.
func retryable(err error) bool {
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := err.Error()
	// The SQL, Glue, Hive and Hadoop catalogs report a stale base as a
	// plain "requirement failed: branch "main" has changed" error;
	// SQLite reports lock contention between processes as busy.
	return strings.Contains(msg, "requirement failed") ||
		strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "SQLITE_BUSY") ||
		strings.Contains(msg, "commit failed due to unknown reason")
}

// backoff spaces retries: doubling from the configured initial wait up to
// the maximum, with jitter so contending committers do not retry in step.
type backoff struct {
	next, max time.Duration
}

func (t *task) backoff() *backoff {
	return &backoff{next: t.cfg.retryBackoff, max: t.cfg.retryMaxBackoff}
}

func (b *backoff) wait(ctx context.Context) error {
	d := b.next
	if d > 0 {
		d = d/2 + rand.N(d/2+1)
	}
	b.next = min(b.next*2, b.max)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
