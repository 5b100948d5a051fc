package maintenance

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lockTable is the table of maintenance locks in the SQL catalog's
// database. One row per (catalog, table, task) that is or was held;
// a row whose lease expired is free.
const lockTable = "floe_maintenance_locks"

// errLockLost is the cause of a task's context ending because its lease
// could not be renewed (another instance may hold the lock now): the task
// stops before committing anything more.
var errLockLost = errors.New("maintenance lock lost")

// lockKey names one lock: one task kind on one table.
type lockKey struct{ table, task string }

func (k lockKey) String() string { return k.table + " " + k.task }

// lockStore keeps leases. Every method is atomic on its own, across
// processes and hosts as far as the store reaches.
type lockStore interface {
	// tryLock takes key for owner until ttl from now when it is free,
	// expired or already owner's. When another owner holds it, ok is
	// false and holder names that owner.
	tryLock(ctx context.Context, key lockKey, owner string, ttl time.Duration) (ok bool, holder string, err error)
	// renew extends owner's lease; false means owner no longer holds it.
	renew(ctx context.Context, key lockKey, owner string, ttl time.Duration) (bool, error)
	// unlock frees key if owner holds it.
	unlock(ctx context.Context, key lockKey, owner string) error
}

// locker hands out leases of one store to one owner (a maintenance task
// instance) and keeps them renewed.
type locker struct {
	store lockStore
	owner string
	ttl   time.Duration
	log   *slog.Logger
}

// newOwner returns a lock owner id that is unique across hosts and
// processes and says where the holder runs.
func newOwner(connector string) string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s@%s/%d/%s", connector, host, os.Getpid(), hex.EncodeToString(b))
}

// acquire takes key. When it is held elsewhere, it returns a nil context
// and the holder. Otherwise the returned context ends when the lease is
// lost (cause errLockLost) or ctx ends; call release when done.
func (l *locker) acquire(ctx context.Context, key lockKey) (held context.Context, release func(), holder string, err error) {
	ok, holder, err := l.store.tryLock(ctx, key, l.owner, l.ttl)
	if err != nil {
		return nil, nil, "", fmt.Errorf("lock %s: %w", key, err)
	}
	if !ok {
		return nil, nil, holder, nil
	}
	held, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		lastOK := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-held.Done():
				return
			case <-t.C:
			}
			ok, err := l.store.renew(held, key, l.owner, l.ttl)
			switch {
			case err == nil && ok:
				lastOK = time.Now()
			case err == nil:
				l.log.Warn("maintenance lock taken over; stopping the task", "table", key.table, "task", key.task)
				cancel(errLockLost)
				return
			case time.Since(lastOK) > l.ttl*2/3:
				l.log.Warn("cannot renew the maintenance lock; stopping the task before its lease ends", "table", key.table, "task", key.task, "error", err)
				cancel(errLockLost)
				return
			}
		}
	})
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			cancel(nil)
			uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer ucancel()
			if err := l.store.unlock(uctx, key, l.owner); err != nil {
				l.log.Warn("cannot release the maintenance lock; it frees when its lease ends", "table", key.table, "task", key.task, "error", err)
			}
		})
	}
	return held, release, "", nil
}

// sqlLocks keeps leases in the catalog's database, so maintenance
// instances in any process on any host that share the catalog exclude
// each other. Leases use the holder's clock; hosts' clocks must agree to
// well within the lease.
type sqlLocks struct {
	db      *sql.DB
	dialect sqlDialect
	catalog string
	// clock is the holder's clock (time.Now).
	clock func() time.Time
}

// newSQLLocks creates the lock table if it is missing.
func newSQLLocks(ctx context.Context, db *sql.DB, dialect sqlDialect, catalogName string) (*sqlLocks, error) {
	switch dialect {
	case dialectSQLite, dialectPostgres:
	default:
		return nil, fmt.Errorf("maintenance locks: unsupported SQL dialect %q (sqlite and postgres are)", dialect)
	}
	ddl := `CREATE TABLE IF NOT EXISTS ` + lockTable + ` (
		catalog_name VARCHAR(255) NOT NULL,
		table_name VARCHAR(1024) NOT NULL,
		task VARCHAR(64) NOT NULL,
		owner VARCHAR(255) NOT NULL,
		expires_at BIGINT NOT NULL,
		acquired_at BIGINT NOT NULL,
		PRIMARY KEY (catalog_name, table_name, task))`
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("maintenance locks: create table %s: %w", lockTable, err)
	}
	return &sqlLocks{db: db, dialect: dialect, catalog: catalogName, clock: time.Now}, nil
}

// q rewrites ? placeholders for the dialect.
func (s *sqlLocks) q(query string) string {
	if s.dialect != dialectPostgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *sqlLocks) tryLock(ctx context.Context, key lockKey, owner string, ttl time.Duration) (bool, string, error) {
	now := s.clock().UnixMilli()
	// One statement: insert the row, or take it over when its lease
	// expired or it is ours already. Both SQLite (3.24+) and Postgres
	// (9.5+) run it atomically and report 0 rows when the WHERE refused.
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO `+lockTable+` (catalog_name, table_name, task, owner, expires_at, acquired_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (catalog_name, table_name, task) DO UPDATE
		SET owner = excluded.owner, expires_at = excluded.expires_at, acquired_at = excluded.acquired_at
		WHERE `+lockTable+`.expires_at < ? OR `+lockTable+`.owner = excluded.owner`),
		s.catalog, key.table, key.task, owner, now+ttl.Milliseconds(), now, now)
	if err != nil {
		return false, "", err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, "", err
	}
	if n > 0 {
		return true, "", nil
	}
	var holder string
	var expires int64
	err = s.db.QueryRowContext(ctx, s.q(`SELECT owner, expires_at FROM `+lockTable+` WHERE catalog_name = ? AND table_name = ? AND task = ?`),
		s.catalog, key.table, key.task).Scan(&holder, &expires)
	if err != nil {
		return false, "unknown", nil
	}
	return false, fmt.Sprintf("%s (lease ends in %s)", holder, time.UnixMilli(expires).Sub(s.clock()).Round(time.Second)), nil
}

func (s *sqlLocks) renew(ctx context.Context, key lockKey, owner string, ttl time.Duration) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE `+lockTable+` SET expires_at = ? WHERE catalog_name = ? AND table_name = ? AND task = ? AND owner = ?`),
		s.clock().Add(ttl).UnixMilli(), s.catalog, key.table, key.task, owner)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (s *sqlLocks) unlock(ctx context.Context, key lockKey, owner string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM `+lockTable+` WHERE catalog_name = ? AND table_name = ? AND task = ? AND owner = ?`),
		s.catalog, key.table, key.task, owner)
	return err
}

// fileLocks keeps leases as locked files under a folder of floe.data.dir,
// for catalogs without a database of their own (REST, Glue, Hive,
// Hadoop). They exclude maintenance instances on the same host only: run
// one `floe maintain` per table per host for those catalogs.
type fileLocks struct {
	dir  string
	mu   sync.Mutex
	held map[lockKey]*os.File
}

func newFileLocks(dir string) (*fileLocks, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("maintenance locks: %w", err)
	}
	return &fileLocks{dir: dir, held: map[lockKey]*os.File{}}, nil
}

func (f *fileLocks) path(key lockKey) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, s)
	}
	return filepath.Join(f.dir, clean(key.table)+"."+clean(key.task)+".lock")
}

func (f *fileLocks) tryLock(_ context.Context, key lockKey, owner string, _ time.Duration) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.held[key]; ok {
		return true, "", nil
	}
	file, ok, err := lockFile(f.path(key))
	if err != nil {
		return false, "", err
	}
	if !ok {
		b, _ := os.ReadFile(f.path(key))
		return false, strings.TrimSpace(string(b)), nil
	}
	_ = file.Truncate(0)
	_, _ = file.WriteAt([]byte(owner+"\n"), 0)
	f.held[key] = file
	return true, "", nil
}

func (f *fileLocks) renew(_ context.Context, key lockKey, _ string, _ time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.held[key]
	return ok, nil
}

func (f *fileLocks) unlock(_ context.Context, key lockKey, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, ok := f.held[key]
	if !ok {
		return nil
	}
	delete(f.held, key)
	// The file stays: removing it would let a waiter lock a new file
	// while another still holds the old one's lock.
	return unlockFile(file)
}
