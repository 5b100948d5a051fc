package kafkastore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/host/store"
)

// TestOffsets: the store interface across two workers, tombstones, and a
// restarted reader.
func TestOffsets(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t, KeyOffsetPartitions, "7")
	a, b := c.offsets(t, "w1"), c.offsets(t, "w2")
	if n := len(a.Table().Partitions()); n != 7 {
		t.Fatalf("offset topic has %d partitions, want offset.storage.partitions=7", n)
	}
	if _, err := b.Committed(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := a.PutCommitted(ctx, "c", store.Committed{Checkpoint: 7, Positions: map[string]int64{"t/0": 10, "t/1": 3}, CommittedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutOverride(ctx, "c", store.Override{Positions: map[string]int64{"t/0": 3}, AfterCheckpoint: 7, Created: now}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutCommitter(ctx, "c", CommitterPosition{ControlPartition: 2, ControlOffset: 99, Epoch: 4}); err != nil {
		t.Fatal(err)
	}
	cm, err := b.Committed(ctx, "c")
	if err != nil || cm.Checkpoint != 7 || cm.Positions["t/0"] != 10 || !cm.CommittedAt.Equal(now) {
		t.Fatalf("committed %+v %v", cm, err)
	}
	if ov, err := b.Override(ctx, "c"); err != nil || ov.Positions["t/0"] != 3 || ov.AfterCheckpoint != 7 {
		t.Fatalf("override %+v %v", ov, err)
	}
	if p, err := b.Committer(ctx, "c"); err != nil || p.ControlPartition != 2 || p.ControlOffset != 99 || p.Epoch != 4 {
		t.Fatalf("committer %+v %v", p, err)
	}
	if err := b.DeleteOverride(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Override(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("override after delete: %v", err)
	}
	if err := a.DeleteOffsets(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Committed(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("committed after DeleteOffsets: %v", err)
	}
	if _, err := b.Committer(ctx, "c"); err != nil {
		t.Fatalf("DeleteOffsets took the committer position: %v", err)
	}
	if err := b.DeleteCommitter(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.offsets(t, "w3").Committer(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("restarted reader sees a deleted committer: %v", err)
	}
}

// TestReadToEndSeesAcknowledgedWrites: concurrent writers on one worker;
// once every write returned, another worker's ReadToEnd sees all of them,
// and so does a reader started afterwards.
func TestReadToEndSeesAcknowledgedWrites(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	a, b := c.offsets(t, "w1"), c.offsets(t, "w2")
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := fmt.Sprintf("conn-%d", w)
				if err := a.PutCommitted(ctx, name, store.Committed{Checkpoint: uint64(i + 1)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged writes from %d writers in %s", writers*each, writers, time.Since(start))
	for _, o := range []*Offsets{b, c.offsets(t, "w3")} {
		for w := range writers {
			cm, err := o.Committed(ctx, fmt.Sprintf("conn-%d", w))
			if err != nil || cm.Checkpoint != each {
				t.Fatalf("conn-%d: %+v %v", w, cm, err)
			}
		}
	}
}
