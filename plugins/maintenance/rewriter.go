package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// compactFunc reads a group's files and writes them back at the target
// size without committing anything (table.ExecuteCompactionGroup; tests
// hand in one that holds a group back).
type compactFunc func(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, opts ...table.CompactionGroupOption) (table.CompactionGroupResult, error)

// rewriter executes planned groups and commits their results.
type rewriter struct {
	env     runEnv
	sel     selection
	planned *table.Table
	fs      iceio.IO
	// replanEvery is how often the run looks at the table again while
	// its first plan's groups are still being rewritten (0: never).
	replanEvery time.Duration
	// reserved holds the files of every group the run planned; a re-plan
	// leaves them out. Only the scheduling goroutine uses it.
	reserved                 map[string]bool
	replans, replannedGroups int

	// mu serializes commits and guards the totals, errs and the waves'
	// pending results.
	mu sync.Mutex
	// Totals of what was committed.
	removedFiles, addedFiles int
	removedBytes, addedBytes int64
	committedGroups, commits int
	retries, droppedGroups   int
	errs                     []error
	// Groups that copied the row groups of some of their files, those
	// files and their bytes.
	copiedGroups, copiedFiles int
	copiedBytes               int64
}

// job is one partition group to rewrite and the view of the table it is
// read and written through.
type job struct {
	g   table.CompactionTaskGroup
	tbl *table.Table
	w   *wave
}

// wave is the groups of one plan (the run's first, or a re-plan). With
// partial progress its results are committed in batches of perCommit, the
// last one when its last group ends.
type wave struct {
	perCommit int
	left      int                           // groups not ended yet; guarded by rw.mu
	pending   []table.CompactionGroupResult // guarded by rw.mu
}

// wave turns groups planned on tbl into jobs committed in up to commits
// batches, and reserves their files. Groups under the done size are
// written through tbl seen with the intermediate codec, as their output
// will be merged again; a forced run writes everything with the table's.
func (rw *rewriter) wave(tbl *table.Table, groups []table.CompactionTaskGroup, commits int) ([]job, error) {
	final, err := writeView(tbl, compression{})
	if err != nil {
		return nil, err
	}
	intermediate := final
	if !rw.env.forced {
		if intermediate, err = writeView(tbl, rw.env.s.intermediateCompression); err != nil {
			return nil, err
		}
	}
	w := &wave{perCommit: (len(groups) + commits - 1) / max(commits, 1), left: len(groups)}
	jobs := make([]job, 0, len(groups))
	for _, g := range groups {
		view := final
		if g.TotalSizeBytes < rw.sel.done && !rw.sel.idle[g.PartitionKey] {
			view = intermediate
		}
		jobs = append(jobs, job{g: g, tbl: view, w: w})
		for _, t := range g.Tasks {
			rw.reserved[t.File.FilePath()] = true
		}
	}
	return jobs, nil
}

// replanFor bounds, in replan intervals, how long re-plans go on after
// a run's first plan is done: they go on while a group re-planned before
// is still being rewritten, so the newest files keep being merged while a
// big group runs, and a run still ends.
const replanFor = 30

// run rewrites the jobs smallest first, up to max-concurrent-groups at
// once (each next one starts as soon as one ends, so a big group does not
// hold back the small ones behind it; small groups, of at most 1/16 of
// the target, have one more slot), and commits them: with partial
// progress each wave in up to partial-progress.max-commits commits, each
// as soon as its share is done; all together at the end without.
//
// While the run's groups are being rewritten, the table is planned again
// every replan interval, leaving out the run's files: at 1 s commits a
// big merge takes seconds, and every partition gains a file a second
// meanwhile. Those new files are merged in quick groups of their own
// (selection.quick), which go ahead of bigger ones still waiting.
// Re-plans stop once no group is left of the run, or replanFor intervals
// after its first plan's last group, so a run ends.
func (rw *rewriter) run(ctx context.Context, queue []job) error {
	first := queue[0].w
	all := []*wave{first}
	slots := max(rw.env.s.maxGroups, 1)
	ended := make(chan struct{})
	running := 0
	var replan <-chan time.Time
	replans := 0 // ticks since the first plan's last group ended
	if rw.replanEvery > 0 {
		ticks, stop := rw.env.ticker(rw.replanEvery)
		defer stop()
		replan = ticks
	}
	bySize := func(a, b job) int { return cmp.Compare(a.g.TotalSizeBytes, b.g.TotalSizeBytes) }
	slices.SortStableFunc(queue, bySize)
	var wg sync.WaitGroup
	// next is the index of the smallest job that may start now: any job
	// when a slot is free; a small one in one slot beyond them, so the
	// newest files are merged while the biggest groups hold every slot.
	next := func() int {
		for i, j := range queue {
			if running < slots || (running == slots && rw.sel.small(j.g)) {
				return i
			}
		}
		return -1
	}
	for {
		stop := rw.stopping(ctx)
		for i := next(); i >= 0 && !stop; i = next() {
			j := queue[i]
			queue = slices.Delete(queue, i, i+1)
			running++
			wg.Go(func() {
				rw.execute(ctx, j)
				ended <- struct{}{}
			})
		}
		if running == 0 && (len(queue) == 0 || stop) {
			break
		}
		select {
		case <-ended:
			running--
		case <-replan:
			rw.mu.Lock()
			firstBusy := first.left > 0
			rw.mu.Unlock()
			if !firstBusy {
				replans++
			}
			if running == 0 || replans > replanFor || stop {
				replan = nil
				continue
			}
			if more := rw.replan(ctx); len(more) > 0 {
				all = append(all, more[0].w)
				queue = append(queue, more...)
				slices.SortStableFunc(queue, bySize)
			}
		}
	}
	wg.Wait()
	var pending []table.CompactionGroupResult
	for _, w := range all {
		pending = append(pending, w.pending...)
	}
	if err := ctx.Err(); err != nil {
		rw.discard(pending)
		return errors.Join(append(rw.errs, context.Cause(ctx))...)
	}
	if !rw.env.s.partialProgress && len(rw.errs) > 0 {
		rw.discard(pending) // all or nothing
		return errors.Join(rw.errs...)
	}
	if len(pending) > 0 {
		rw.commit(ctx, pending)
	}
	return errors.Join(rw.errs...)
}

// stopping reports that no further group should start: the run's context
// ended, or a group failed and the run commits all or nothing.
func (rw *rewriter) stopping(ctx context.Context) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return ctx.Err() != nil || (len(rw.errs) > 0 && !rw.env.s.partialProgress)
}

// execute rewrites one job's group and books its result in its wave,
// committing the wave's batch when it is complete.
func (rw *rewriter) execute(ctx context.Context, j job) {
	res, err := rw.rewriteGroup(ctx, j)
	if err != nil {
		rw.discard([]table.CompactionGroupResult{res})
	}
	rw.mu.Lock()
	w := j.w
	w.left--
	switch {
	case err != nil:
		rw.errs = append(rw.errs, fmt.Errorf("partition %s: %w", partitionLabel(j.g.PartitionKey), err))
	case len(res.OldDataFiles) > 0 && len(res.NewDataFiles) > 0:
		w.pending = append(w.pending, res)
	}
	var batch []table.CompactionGroupResult
	if rw.env.s.partialProgress && len(w.pending) > 0 && (len(w.pending) >= w.perCommit || w.left == 0) {
		batch, w.pending = w.pending, nil
	}
	rw.mu.Unlock()
	if batch != nil {
		rw.commit(ctx, batch)
	}
}

// replan plans the table as it is now, leaving out the run's files, in
// quick groups (the newest files and the smallest tiers), and returns
// them as one wave committed at once. A failed look is
// logged and left to the next tick: the run's own groups go on.
func (rw *rewriter) replan(ctx context.Context) []job {
	failed := func(err error) []job {
		if ctx.Err() == nil {
			rw.env.log.Debug("cannot re-plan while the run lasts; the next tick tries again", "table", rw.planned.Identifier(), "error", err)
		}
		return nil
	}
	fresh, err := rw.env.cat.LoadTable(ctx, rw.planned.Identifier())
	if err != nil {
		return failed(err)
	}
	groups, _, _, err := planGroups(ctx, rw.env.s, rw.sel.quick(), fresh, rw.reserved, time.Now())
	if err != nil {
		return failed(err)
	}
	if len(groups) == 0 {
		return nil
	}
	jobs, err := rw.wave(fresh, groups, 1)
	if err != nil {
		return failed(err)
	}
	rw.replans++
	rw.replannedGroups += len(groups)
	return jobs
}

// commit commits results as one replace snapshot, re-applying it on a
// fresh table after each conflict. Before each attempt it checks the fresh
