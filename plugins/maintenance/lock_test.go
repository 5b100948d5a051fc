package maintenance

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// checkExclusive runs the lease rules against two stores that share their
// backing (two processes' views). later, when the stores' leases expire,
// moves both stores' clocks on.
func checkExclusive(t *testing.T, a, b lockStore, later func(time.Duration)) {
	ctx := context.Background()
	key := lockKey{"db.events", taskRewriteData}
	ttl := time.Minute
	if ok, _, err := a.tryLock(ctx, key, "A", ttl); err != nil || !ok {
		t.Fatalf("A: ok=%v err=%v", ok, err)
	}
	ok, holder, err := b.tryLock(ctx, key, "B", ttl)
	if err != nil || ok || holder == "" {
		t.Fatalf("B took A's lock: ok=%v holder=%q err=%v", ok, holder, err)
	}
	if ok, _, err := b.tryLock(ctx, lockKey{"db.events", taskExpire}, "B", ttl); err != nil || !ok {
		t.Fatalf("another task on the same table: ok=%v err=%v", ok, err)
	}
	if ok, err := a.renew(ctx, key, "A", ttl); err != nil || !ok {
		t.Fatalf("A renew: %v %v", ok, err)
	}
	if err := a.unlock(ctx, key, "A"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := b.tryLock(ctx, key, "B", 50*time.Millisecond); err != nil || !ok {
		t.Fatalf("B after A released: ok=%v err=%v", ok, err)
	}
	if later == nil {
		return
	}
	later(100 * time.Millisecond)
	if ok, _, err := a.tryLock(ctx, key, "A", ttl); err != nil || !ok {
		t.Fatalf("A after B's lease ended: ok=%v err=%v", ok, err)
	}
	if ok, err := b.renew(ctx, key, "B", ttl); err != nil || ok {
		t.Fatalf("B renewed a lease it lost: %v %v", ok, err)
	}
	_ = a.unlock(ctx, key, "A")
	_ = b.unlock(ctx, lockKey{"db.events", taskExpire}, "B")
}

func TestSQLLocks(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend) {
		var stores []lockStore
		// The stores' clock: the test moves it past a lease instead of
		// waiting for the lease to end.
		var skew atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		for range 2 {
			conn, err := b.open(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.close() })
			s, err := newSQLLocks(context.Background(), conn.db, conn.dialect, b.catalogName)
			if err != nil {
				t.Fatal(err)
			}
			s.clock = clock
			stores = append(stores, s)
		}
		checkExclusive(t, stores[0], stores[1], func(d time.Duration) { skew.Add(int64(d)) })
	})
}

func TestFileLocks(t *testing.T) {
	dir := t.TempDir()
	a, err := newFileLocks(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newFileLocks(dir)
	checkExclusive(t, a, b, nil)
}

// TestLeaseLost: when another owner takes the lock over, the holder's
// task context ends with errLockLost.
func TestLeaseLost(t *testing.T) {
	b := sqliteBackend(t)
	conn, err := b.open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.close() }()
	store, err := newSQLLocks(context.Background(), conn.db, conn.dialect, "floe")
	if err != nil {
		t.Fatal(err)
	}
	renewals := make(chan bool, 64)
	l := &locker{store: renewSpy{store, renewals}, owner: "A", ttl: 300 * time.Millisecond, log: testLogger(t)}
	key := lockKey{"db.events", taskExpire}
	held, release, _, err := l.acquire(context.Background(), key)
	if err != nil || held == nil {
		t.Fatalf("acquire: %v", err)
	}
	defer release()
	// Renewals keep it past its first lease: four of them (every third of
	// the lease) take it past 300 ms.
	for i := range 4 {
		select {
		case ok := <-renewals:
			if !ok {
				t.Fatalf("renewal %d failed while A held the lock", i+1)
			}
		case <-held.Done():
			t.Fatalf("lease lost while renewed: %v", context.Cause(held))
		}
	}
	if held.Err() != nil {
		t.Fatalf("lease lost while renewed: %v", context.Cause(held))
	}
	if _, err := conn.db.Exec(`UPDATE ` + lockTable + ` SET owner = 'B'`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
		if !errors.Is(context.Cause(held), errLockLost) {
			t.Fatalf("cause: %v", context.Cause(held))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the task kept running after its lock was taken over")
	}
}

// renewSpy reports each renewal's outcome on a channel (dropping reports
// nobody waits for).
type renewSpy struct {
	lockStore
	renewed chan<- bool
}

func (r renewSpy) renew(ctx context.Context, key lockKey, owner string, ttl time.Duration) (bool, error) {
	ok, err := r.lockStore.renew(ctx, key, owner, ttl)
	select {
	case r.renewed <- ok && err == nil:
	default:
	}
	return ok, err
}

// TestTwoInstancesRace: two maintenance instances (two connections, as two
// processes would have) cycle over the same table at once; only one
// compacts it.
func TestTwoInstancesRace(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend) {
		cat := b.catalog(t)
		createTable(t, cat, "db.events", nil)
		n := fill(t, newWriter(cat, "db.events", "orders"), 60, 2, 2)
		cfg := b.config("db.events", only(taskRewriteData)...)
		cfgB := b.config("db.events", only(taskRewriteData)...)
		cfgB[keyDataDir] = t.TempDir() // separate history: only the lock can keep them apart
		tasks := []*task{b.openTask(t, cfg), b.openTask(t, cfgB)}
		var wg sync.WaitGroup
		results := make([]sdk.CycleResult, len(tasks))
		for i, tk := range tasks {
			wg.Go(func() { results[i] = cycle(t, tk, sdk.CycleRequest{}) })
		}
		wg.Wait()
		runs := len(runsOf(results[0].Runs, taskRewriteData)) + len(runsOf(results[1].Runs, taskRewriteData))
		if runs != 1 {
			t.Fatalf("compaction ran %d times: %+v / %+v", runs, results[0].Runs, results[1].Runs)
		}
		if sh := shape(t, cat, "db.events"); sh.DataFiles != 2 {
			t.Fatalf("data files after: %d", sh.DataFiles)
		}
		scan(t, cat, "db.events").checkExactly(t, n)
	})
}
