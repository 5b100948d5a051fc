package iceberg

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

func TestWriteFlushCommitReadBack(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	changes := prepare(t, tk, 1, schemaV1)
	if len(changes) != 1 || !strings.Contains(changes[0], "db.events: created") {
		t.Fatalf("changes = %q, want the table created", changes)
	}

	commits := step(t, tk, 1, batchV1("orders/0", 0, 100), batchV1("orders/1", 0, 50), batchV1("orders/0", 100, 20))
	if len(commits) != 1 || commits[0].Table != "db.events" || commits[0].Records != 170 || commits[0].Attempts != 1 {
		t.Fatalf("commits = %+v", commits)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"orders/0": {0, 120}, "orders/1": {0, 50}})

	rows := f.readRows("db.events")
	r := rows[7]
	if r.partition != "orders/0" || r.offset != 7 || r.id != 7 || r.name != "name-7" {
		t.Fatalf("row 7 = %+v", r)
	}
	if want := baseTime.Add(7 * time.Second); !r.sourceTS.Equal(want) {
		t.Fatalf("_source_timestamp = %v, want %v", r.sourceTS, want)
	}

	tbl := f.load("db.events")
	snap := tbl.CurrentSnapshot()
	props := snap.Summary.Properties
	if props[summaryConnector] != f.connector || props[summaryCheckpoint] != "1" || props[summaryCommitterEpoch] != "1" ||
		!strings.Contains(props[summaryCommitterID], "-") {
		t.Fatalf("summary = %v", props)
	}
	var offsets map[string]int64
	if err := json.Unmarshal([]byte(props[summaryOffsets]), &offsets); err != nil {
		t.Fatal(err)
	}
	if offsets["orders/0"] != 120 || offsets["orders/1"] != 50 || len(offsets) != 2 {
		t.Fatalf("floe.offsets = %v", offsets)
	}
	if commits[0].SnapshotID != snap.SnapshotID {
		t.Fatalf("reported snapshot %d, table head %d", commits[0].SnapshotID, snap.SnapshotID)
	}
	// __key is dropped; the metadata columns are in the table.
	for _, name := range []string{colSourcePartition, colSourceOffset, colSourceTimestamp} {
		if _, ok := tbl.Schema().FindFieldByName(name); !ok {
			t.Fatalf("table lacks %s: %s", name, tbl.Schema())
		}
	}
	if _, ok := tbl.Schema().FindFieldByName("__key"); ok {
		t.Fatal("table has __key")
	}
	for k, v := range map[string]string{"write.parquet.compression-codec": "zstd", "commit.manifest-merge.enabled": "true", "format-version": ""} {
		if got, ok := tbl.Properties()[k]; v != "" && got != v || v == "" && ok {
			t.Errorf("property %s = %q", k, got)
		}
	}
	if tbl.Metadata().Version() != 2 {
		t.Errorf("format version %d", tbl.Metadata().Version())
	}

	// A second checkpoint accumulates the frontier.
	step(t, tk, 2, batchV1("orders/1", 50, 10), batchV1("orders/2", 0, 5))
	tbl = f.load("db.events")
	if err := json.Unmarshal([]byte(tbl.CurrentSnapshot().Summary.Properties[summaryOffsets]), &offsets); err != nil {
		t.Fatal(err)
	}
	if offsets["orders/0"] != 120 || offsets["orders/1"] != 60 || offsets["orders/2"] != 5 {
		t.Fatalf("floe.offsets after checkpoint 2 = %v", offsets)
	}
	fr, err := tk.Frontier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fr.Checkpoint != 2 || fr.Positions["orders/1"] != 60 || len(fr.Positions) != 3 {
		t.Fatalf("frontier = %+v", fr)
	}
}

func TestEmptyCheckpointMakesNoCommit(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)
	res, err := tk.Flush(context.Background(), 1)
	if err != nil || len(res) != 0 {
		t.Fatalf("flush = %v, %v", res, err)
	}
	tc, err := tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 1})
	if err != nil || len(tc) != 0 {
		t.Fatalf("commit = %v, %v", tc, err)
	}
	if f.load("db.events").CurrentSnapshot() != nil {
		t.Fatal("an empty checkpoint made a snapshot")
	}
}
