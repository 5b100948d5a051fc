package maintenance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// BenchmarkCompaction500 measures what compaction buys: 500 floe commits
// of one row each (one file each, 4 partitions), then a full scan with
// iceberg-go before and after the maintenance plugin compacts the table
// (median of 3 scans each). With FLOE_PYTHON and FLOE_READ_TABLE set (the
// e2e services env), DuckDB scans the table too.
//
//	go test -run '^$' -bench Compaction500 -benchtime 1x ./plugins/maintenance/
func BenchmarkCompaction500(b *testing.B) {
	for range b.N {
		bk := sqliteBackend(b)
		cat := bk.catalog(b)
		createTable(b, cat, "db.events", sinkTableProps)
		w := newWriter(cat, "db.events", "orders")
		start := time.Now()
		for i := range 500 {
			if err := w.commit(context.Background(), []row{{id: int64(i), part: []string{"p0", "p1", "p2", "p3"}[i%4]}}); err != nil {
				b.Fatal(err)
			}
		}
		ingest := time.Since(start)
		before := shape(b, cat, "db.events")
		scanBefore := medianScan(b, bk, 3)
		duckBefore := duckScan(b, bk)

		tk := bk.openTask(b, bk.config("db.events"))
		start = time.Now()
		res, err := tk.Cycle(context.Background(), sdk.CycleRequest{Force: []string{taskRewriteData}})
		if err != nil {
			b.Fatal(err)
		}
		compact := time.Since(start)
		after := shape(b, cat, "db.events")
		scanAfter := medianScan(b, bk, 3)
		duckAfter := duckScan(b, bk)
		scan(b, cat, "db.events").checkExactly(b, 500)
		for _, r := range res.Runs {
			b.Logf("run %s (%s): files %d → %d, %s, %s %s", r.Task, r.Trigger, r.FilesBefore, r.FilesAfter, r.Duration.Round(time.Millisecond), r.Detail, r.Error)
		}
		b.Logf("500 one-row commits in %s; data files %d → %d (per partition %d → %d), manifests %d → %d; cycle %s",
			ingest.Round(time.Millisecond), before.DataFiles, after.DataFiles, before.MaxPartitionFiles, after.MaxPartitionFiles,
			before.Manifests, after.Manifests, compact.Round(time.Millisecond))
		b.Logf("full scan (iceberg-go, median of 3): %s → %s", scanBefore.Round(time.Millisecond), scanAfter.Round(time.Millisecond))
		if duckBefore != "" {
			b.Logf("full scan (DuckDB): %s → %s", duckBefore, duckAfter)
		}
		b.ReportMetric(float64(before.DataFiles), "files-before")
		b.ReportMetric(float64(after.DataFiles), "files-after")
		b.ReportMetric(float64(scanBefore.Milliseconds()), "scan-ms-before")
		b.ReportMetric(float64(scanAfter.Milliseconds()), "scan-ms-after")
	}
}

func medianScan(b *testing.B, bk backend, n int) time.Duration {
	cat := bk.catalog(b)
	var ds []time.Duration
	for range n {
		start := time.Now()
		scan(b, cat, "db.events")
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// duckScan reads the table with the e2e DuckDB reader when the services
// env names it, and returns what it printed (its own timing included).
func duckScan(b *testing.B, bk backend) string {
	py, reader := os.Getenv("FLOE_PYTHON"), os.Getenv("FLOE_READ_TABLE")
	if py == "" || reader == "" {
		return ""
	}
	start := time.Now()
	out, err := exec.Command(py, reader, "--engine", "duckdb",
		"--catalog-uri", filepath.Join(bk.dataDir, "catalog.db"), "--warehouse", "file://"+filepath.Join(bk.dataDir, "warehouse"),
		"--table", "db.events", "--json").CombinedOutput()
	if err != nil {
		b.Logf("DuckDB reader failed (skipped): %v: %s", err, out)
		return ""
	}
	return time.Since(start).Round(time.Millisecond).String() + " (" + strings.TrimSpace(string(out)) + ")"
}
