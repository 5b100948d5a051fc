package maintenance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// catalogConn is the connector's catalog as maintenance uses it.
type catalogConn struct {
	cat catalog.Catalog
	// db is the catalog's database when the catalog is a SQL catalog on
	// SQLite or Postgres: the lock table lives next to iceberg_tables,
	// so every process and host that commits to the catalog sees it.
	// Nil for other catalogs (locks are then files under floe.data.dir).
	db      *sql.DB
	dialect sqlDialect
	close   func() error
}

// sqlDialect names the SQL flavour of the lock table's statements.
type sqlDialect string

const (
	dialectSQLite   sqlDialect = "sqlite"
	dialectPostgres sqlDialect = "postgres"
)

// catalogOpener opens the catalog a connector config names (its
// iceberg.catalog.* keys and the embedded default under floe.data.dir).
// It is the seam between maintenance and the shared catalog code in
// package lake, so tests can hand in a catalog (and its database) of
// their own.
type catalogOpener func(ctx context.Context, config map[string]string) (catalogConn, error)

// openSharedCatalog opens the connector's catalog with package lake, the
// same code the sink uses, so the keys mean the same thing. For a SQL
// catalog it also opens the catalog's database for the lock table.
func openSharedCatalog(ctx context.Context, config map[string]string) (catalogConn, error) {
	c, err := lake.ParseCatalogConfig(config)
	if err != nil {
		return catalogConn{}, fmt.Errorf("iceberg-maintenance: %w", err)
	}
	cat, closeFn, err := lake.OpenCatalog(ctx, c)
	if err != nil {
		return catalogConn{}, fmt.Errorf("iceberg-maintenance: %w", err)
	}
	conn := catalogConn{cat: cat, close: closeFn}
	if c.Type != lake.CatalogSQL {
		return conn, nil
	}
	db, dialect, err := c.OpenDB(ctx)
	if err != nil {
		_ = closeFn()
		return catalogConn{}, fmt.Errorf("iceberg-maintenance: lock table: %w", err)
	}
	conn.db, conn.dialect = db, sqlDialect(dialect)
	conn.close = func() error { return errors.Join(closeFn(), db.Close()) }
	return conn, nil
}

// replayCatalog makes iceberg-go's own refresh-and-replay retry cover
// maintenance commits, tuned to win against frequent ingestion commits. A
// maintenance commit that finds the branch moved (an ingestion commit
// landed while it was being staged) is re-applied on the fresh head by
// iceberg-go: reload, re-run the rewrite's conflict validators (a data
// file to replace that is gone, or a new delete against it, stops it),
// rebuild the manifest list, and commit again. Without it a stale base
// fails at once and the whole task would have to be staged again (seconds
// for a compaction), only to lose the race to the next ingestion commit.
//
// Three things make that work:
//   - the SQL catalog's stale-base answer (`requirement failed: branch
//     "main" has changed`) is reported as table.ErrCommitFailed, the only
//     error iceberg-go replays: the catalog checks requirements before
//     writing anything, so nothing was committed;
//   - tables it loads carry commit.retry.* settings of maintenance's own
//     (in memory only; the table's properties are not changed), because
//     iceberg-go's default is no retry at all;
//   - the reload after a conflict waits (up to replayQuietWait) for the
//     next commit to land and replays right after it, in the quiet gap
//     before the one after, instead of at a random point of the cadence.
//
// Only maintenance's commits go through it: tables it loads carry it as
// their catalog. The sink keeps iceberg-go's retry off on purpose (its
// fencing must see every conflict).
type replayCatalog struct {
	catalog.Catalog

	mu sync.Mutex
	// conflicted marks tables whose last commit found a stale base: their
	// next load is a replay's refresh.
	conflicted map[string]bool
	// replays counts commits that found a stale base and were replayed.
	replays atomic.Int64
}

// replayCount returns how many maintenance commits of cat found a stale
// base (0 for another catalog).
func replayCount(cat catalog.Catalog) int64 {
	if c, ok := cat.(*replayCatalog); ok {
		return c.replays.Load()
	}
	return 0
}

// Replay tuning. iceberg-go caps retries at 10 per commit; the task's own
// retrier stages the whole task again after that.
const (
	replayRetries   = "10"
	replayMinWaitMs = "1"
	replayMaxWaitMs = "100"
	replayTimeoutMs = "120000"
	replayQuietWait = 1500 * time.Millisecond
	replayPoll      = 10 * time.Millisecond
)

func withReplay(cat catalog.Catalog) catalog.Catalog {
	if _, ok := cat.(*replayCatalog); ok || cat == nil {
		return cat
	}
	return &replayCatalog{Catalog: cat, conflicted: map[string]bool{}}
}

// LoadTable loads the table with the replay catalog as its committer and
// the replay retry settings.
func (c *replayCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	replay := c.conflicted[tableName(id)]
	delete(c.conflicted, tableName(id))
	c.mu.Unlock()
	if replay {
		tbl = c.awaitNextCommit(ctx, id, tbl)
	}
	meta := tbl.Metadata()
	if b, err := table.MetadataBuilderFromBase(meta, ""); err == nil {
		if b.SetProperties(iceberg.Properties{
			table.CommitNumRetriesKey:          replayRetries,
			table.CommitMinRetryWaitMsKey:      replayMinWaitMs,
			table.CommitMaxRetryWaitMsKey:      replayMaxWaitMs,
			table.CommitTotalRetryTimeoutMsKey: replayTimeoutMs,
		}) == nil {
			if m, err := b.Build(); err == nil {
				meta = m
			}
		}
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), wholeSmallFiles(tbl.FS), c), nil
}

// awaitNextCommit polls the table until its head moves (a commit just
// landed, so the longest quiet gap starts) or replayQuietWait passes (no
// one is committing), and returns the newest table.
func (c *replayCatalog) awaitNextCommit(ctx context.Context, id table.Identifier, tbl *table.Table) *table.Table {
	head := func(t *table.Table) int64 {
		if s := t.CurrentSnapshot(); s != nil {
			return s.SnapshotID
		}
		return 0
	}
	start := head(tbl)
	deadline := time.Now().Add(replayQuietWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return tbl
		case <-time.After(replayPoll):
		}
		fresh, err := c.Catalog.LoadTable(ctx, id)
		if err != nil {
			return tbl
		}
		if head(fresh) != start {
			return fresh
		}
		tbl = fresh
	}
	return tbl
}

// CommitTable reports a requirement the catalog found stale as
// table.ErrCommitFailed.
func (c *replayCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	meta, loc, err := c.Catalog.CommitTable(ctx, id, reqs, updates)
	if err != nil && !errors.Is(err, table.ErrCommitFailed) && isStaleRequirement(err) {
		err = fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
	}
	if errors.Is(err, table.ErrCommitFailed) {
		c.replays.Add(1)
		c.mu.Lock()
		c.conflicted[tableName(id)] = true
		c.mu.Unlock()
	}
	return meta, loc, err
}

// isStaleRequirement reports the SQL catalog's (and Glue's, Hive's,
// Hadoop's) answer to a commit planned on an old head:
// `requirement failed: branch "main" has changed`.
func isStaleRequirement(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "requirement failed") && strings.Contains(msg, "has changed")
}
