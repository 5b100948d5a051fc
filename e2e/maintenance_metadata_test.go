package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestMaintenanceBoundsMetadata runs a connector committing every 200 ms
// with the maintenance plugin's defaults but max-snapshots 150 (the
// default 400 takes 900 commits, three minutes, to show; compaction adds
// its own snapshots) for 400 commits. The snapshots the table keeps must
// stop growing at max-snapshots plus what the trigger at an eighth more
// and expiry's 15 s min interval let in; metadata.json must stay under
// 512 KiB; the metadata folder must hold about
// write.metadata.previous-versions-max (50, which the sink sets) files,
// as each commit deletes the version it pushed off the log (plus what
// lost commit attempts leave). Without the
// count, an hour's age would keep every snapshot. The table stays exactly
// as ingestion made it.
func TestMaintenanceBoundsMetadata(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"),
		harness.Plugin("iceberg"), harness.Plugin("iceberg-maintenance"), harness.Readers)
	ctx := harness.Context(t, 12*time.Minute)

	const (
		commits = 400
		// maxSnapshots is the bound: 150 kept, the 169 that trigger a run,
		// and what the table gains (about 7 a second, compaction's
		// included) in expiry's 15 s min interval and while the run plans
		// and commits (runs with the default 400 peaked at 493). Without
		// the count, 400 commits keep 400 snapshots and more.
		maxSnapshots = 300
		// maxMetadataBytes is the target for metadata.json.
		maxMetadataBytes = 512 << 10
		// maxMetadataFiles is previous-versions-max and the current
		// version, plus the versions of commit attempts that lost the
		// race (ingestion against compaction and expiry: no log lists
		// them, so no commit deletes them; delete-metadata-files does,
		// every 300 commits, but at most every 5 minutes, so not within
		// this run). Runs measured 6 such versions in 336 commits and 38
		// in 900 (with max-snapshots 400); the allowance leaves room for a slower machine, where
		// more attempts lose, and is still below the files an
		// unbounded folder would hold (400 here).
		maxMetadataFiles = 50 + 1 + 150
	)
	name := "bounded-orders"
	table := "maint.bounded_orders"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":    "iceberg",
		"source":             "datagen",
		"datagen.rate":       "2000",
		"tasks.max":          "2",
		"commit.interval.ms": "200",
		"iceberg.tables":     table,
		"maintenance":        "iceberg-maintenance",
		"maintenance.expire-snapshots.max-snapshots": "150",
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	f.WaitStatus(ctx, name, "connector RUNNING", false, harness.ConnectorStatus.Running)

	// The SQL catalog puts the table at <warehouse>/maint.db/bounded_orders.
	metaDir := filepath.Join(f.DataDir, "warehouse", "maint*", "bounded_orders", "metadata")
	var peak metadataSample
	expiredOnce := false
	f.WaitFor(ctx, fmt.Sprintf("%d commits, the snapshots bounded", commits), func(ctx context.Context) (bool, string, error) {
		st, err := f.API.Status(ctx, name)
		if err != nil || st.Floe == nil {
			return false, fmt.Sprint("no status yet ", err), nil
		}
		s, err := sampleMetadata(metaDir)
		if err != nil {
			return false, err.Error(), nil
		}
		if s.snapshots < peak.snapshots {
			expiredOnce = true
		}
		peak = peak.max(s)
		if s.snapshots > maxSnapshots || s.files > maxMetadataFiles || s.bytes > maxMetadataBytes {
			return false, "", fmt.Errorf("after %d commits: %s; want at most %d snapshots, %d metadata.json files, metadata.json %d KiB",
				st.Floe.Commits, s, maxSnapshots, maxMetadataFiles, maxMetadataBytes>>10)
		}
		state := fmt.Sprintf("%d commits: %s (peak %s)", st.Floe.Commits, s, peak)
		return st.Floe.Commits >= commits && expiredOnce, state, nil
	})
	t.Logf("peak over the run: %s", peak)

	rep, err := f.API.Tables(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := rep["maintenance_runs"].([]any)
	expiries := 0
	for _, r := range runs {
		run, _ := r.(map[string]any)
		if run["task"] != "expire-snapshots" {
			continue
		}
		if e, _ := run["error"].(string); e != "" {
			t.Fatalf("expire-snapshots failed: %s", e)
		}
		expiries++
		t.Logf("expire-snapshots (%v): %v", run["trigger"], run["detail"])
	}
	if expiries == 0 {
		t.Errorf("GET tables lists no expire-snapshots run: %v", runs)
	}
	f.Stop()
	checkCompactedTable(t, env, f, conn, table, 1)
}

// metadataSample is a look at a table's metadata folder.
type metadataSample struct {
	files, snapshots int
	bytes            int64 // the current metadata.json
}

func (s metadataSample) String() string {
	return fmt.Sprintf("%d snapshots, metadata.json %.1f KiB, %d metadata.json files", s.snapshots, float64(s.bytes)/1024, s.files)
}

func (s metadataSample) max(o metadataSample) metadataSample {
	return metadataSample{files: max(s.files, o.files), snapshots: max(s.snapshots, o.snapshots), bytes: max(s.bytes, o.bytes)}
}

// sampleMetadata reads the newest NNNNN-<uuid>.metadata.json of a local
// table's metadata folder (a glob pattern) and counts the folder's
// versions.
func sampleMetadata(dir string) (metadataSample, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.metadata.json"))
	if err != nil {
		return metadataSample{}, fmt.Errorf("list %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return metadataSample{}, fmt.Errorf("no metadata.json in %s yet", dir)
	}
	version := func(p string) int {
		n, _ := strconv.Atoi(strings.SplitN(filepath.Base(p), "-", 2)[0])
		return n
	}
	sort.Slice(paths, func(i, j int) bool { return version(paths[i]) > version(paths[j]) })
	b, err := os.ReadFile(paths[0])
	if err != nil {
		return metadataSample{}, err // deleted meanwhile: look again
	}
	var md struct {
		Snapshots []json.RawMessage `json:"snapshots"`
	}
	if err := json.Unmarshal(b, &md); err != nil {
		return metadataSample{}, fmt.Errorf("%s: %w", paths[0], err)
	}
	return metadataSample{files: len(paths), snapshots: len(md.Snapshots), bytes: int64(len(b))}, nil
}
