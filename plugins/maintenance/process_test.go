package maintenance

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
	"github.com/floehq/floe/sdk/sdktest"
)

// startPlugin starts the built plugin binary as floe does, with the
// GOMAXPROCS and GOMEMLIMIT the host sets from process.maintenance.cpus
// and .memory.
func startPlugin(t *testing.T) *client.Process {
	t.Helper()
	bin := sdktest.Build(t, "./cmd/floe-plugin-iceberg-maintenance", "iceberg-maintenance")
	p, err := client.Start(t.Context(), client.StartOptions{Path: bin, Env: []string{"GOMAXPROCS=1", "GOMEMLIMIT=536870912"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// TestIngestionWithMaintenance: floe-style commits every second (4
// partitions, one file each) while the maintenance plugin cycles as the
// host drives it. No row is lost or duplicated, ingestion never fails, and
// the data files per partition stay at most 10.
func TestIngestionWithMaintenance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ingestion for 20 s")
	}
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")

	p := startPlugin(t)
	ctx := t.Context()
	mt, err := p.OpenMaintenance(ctx, client.MaintenanceOpen{Component: "iceberg-maintenance", Connector: "orders",
		Config: b.config("db.events",
			keyPollInterval, "2000",
			"maintenance.rewrite-data-files.min-interval.ms", "0",
			"maintenance.rewrite-data-files.trigger.data-file-count", "5",
			"maintenance.expire-snapshots.max-age.ms", "5000",
			"maintenance.expire-snapshots.min-interval.ms", "3000",
			"maintenance.expire-snapshots.trigger.snapshot-count", "20")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mt.Close(context.Background()) }()

	stop := make(chan struct{})
	var written atomic.Int64
	var ingestErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n := written.Load()
			if err := w.commit(context.Background(), rowsFor(n, 40, 4)); err != nil {
				ingestErr = err
				return
			}
			written.Add(40)
		}
	})

	var maxFiles int64
	runs := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res, err := mt.Cycle(ctx, sdk.CycleRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Runs {
			if r.Error != "" {
				t.Errorf("%s failed: %s", r.Task, r.Error)
			}
			runs[r.Task]++
		}
		st, err := mt.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sh := shape(t, cat, "db.events")
		maxFiles = max(maxFiles, sh.MaxPartitionFiles)
		t.Logf("after cycle: %d data files, at most %d per partition, %d snapshots, %d manifests (status: %d runs)",
			sh.DataFiles, sh.MaxPartitionFiles, sh.Snapshots, sh.Manifests, len(st.Runs))
		time.Sleep(res.Next)
	}
	close(stop)
	wg.Wait()
	if ingestErr != nil {
		t.Fatalf("ingestion failed: %v", ingestErr)
	}
	scan(t, cat, "db.events").checkExactly(t, written.Load())
	t.Logf("%d rows in %d commits (%d ingestion conflicts retried); runs %v; at most %d data files per partition after a cycle",
		written.Load(), w.checkpoint, w.conflicts, runs, maxFiles)
	if runs[taskRewriteData] == 0 || runs[taskExpire] == 0 {
		t.Errorf("runs: %v; want compaction and expiry", runs)
	}
	if maxFiles > 10 {
		t.Errorf("a partition held %d data files after a cycle; want at most 10", maxFiles)
	}
}
