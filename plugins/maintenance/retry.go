package maintenance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Backoff between commit attempts: short, because the conflicts are with
// ingestion commits that take milliseconds, and jittered so that a
// maintenance commit does not fall in step with a 1 s commit cadence.
const (
	retryInitialBackoff = 50 * time.Millisecond
	retryMaxBackoff     = 2 * time.Second
)

// isConflict reports an optimistic-concurrency conflict: the table moved
// between planning and committing, nothing was committed, and a re-plan on
// a fresh table may succeed. iceberg-go's SQL catalog (and Glue, Hive,
// Hadoop) report a stale base as `requirement failed: branch "main" has
// changed`, which is not table.ErrCommitFailed.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, table.ErrCommitFailed) || isStaleRequirement(err)
}

// retrier runs a task's plan-and-commit step until it commits, retrying
// on conflicts with concurrent commits (ingestion's, other tasks') on a
// freshly loaded table. Ingestion never waits for it: the catalog's
// optimistic concurrency lets whichever commit comes first win, and the
// loser (usually maintenance, whose commits are rarer) re-plans.
type retrier struct {
	cat         catalog.Catalog
	maxAttempts int
}

// attemptFunc plans and commits on tbl. It returns the committed table,
// or an error; a conflict error makes the retrier reload and call it
// again.
type attemptFunc func(ctx context.Context, tbl *table.Table) (*table.Table, error)

// run calls attempt with tbl, then with reloaded tables after conflicts,
// at most maxAttempts times. It returns the committed table and how many
// conflicts it retried.
func (r retrier) run(ctx context.Context, tbl *table.Table, attempt attemptFunc) (*table.Table, int, error) {
	backoff := retryInitialBackoff
	for n := 1; ; n++ {
		out, err := attempt(ctx, tbl)
		if err == nil {
			return out, n - 1, nil
		}
		if !isConflict(err) || ctx.Err() != nil {
			return nil, n - 1, err
		}
		if n >= r.maxAttempts {
			return nil, n - 1, fmt.Errorf("gave up after %d attempts, the table kept moving: %w", n, err)
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return nil, n, context.Cause(ctx)
		case <-time.After(wait):
		}
		backoff = min(backoff*2, retryMaxBackoff)
		fresh, lerr := r.cat.LoadTable(ctx, tbl.Identifier())
		if lerr != nil {
			return nil, n, fmt.Errorf("reload table after a commit conflict: %w", lerr)
		}
		tbl = fresh
	}
}
