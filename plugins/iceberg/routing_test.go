package iceberg

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
)

func TestRouteByFieldRegex(t *testing.T) {
	f := newFixture(t, map[string]string{
		keyTables:     "db.west,db.east,db.never",
		keyRouteField: "country",
		prefixTable + "db.west" + suffixRouteRegex:  "fr|nl",
		prefixTable + "db.east" + suffixRouteRegex:  "de|pl|nl", // nl goes to both
		prefixTable + "db.never" + suffixRouteRegex: "xx",
		keyUnrouted: unroutedReject,
	})
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)
	// countries cycle de, fr, nl, pl; offsets 40.. are "it" or null.
	odd := func(col string, off int64, b array.Builder) bool {
		if col != "country" || off < 40 {
			return false
		}
		if off%2 == 0 {
			b.(*array.StringBuilder).Append("it")
		} else {
			b.AppendNull()
		}
		return true
	}
	b := batchRows(schemaV1, 1, "p", 0, 50, odd)
	writers := make([]uint32, 50)
	for i := range writers {
		writers[i] = uint32(i % 3 % 2)
	}
	rejected, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: 1, Batch: b, Writers: writers})
	b.Records.Release()
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 10 || rejected[0].Offset != 40 || !strings.Contains(rejected[0].Reason, `country = "it" matches no table's route-regex`) ||
		!strings.Contains(rejected[1].Reason, "route field country is null") {
		t.Fatalf("rejected = %+v", rejected)
	}
	commits := flushCommit(t, tk, 1, []sdk.Range{{Partition: "p", From: 0, Next: 50}})
	if len(commits) != 2 {
		t.Fatalf("commits = %+v", commits)
	}
	count := func(name string) map[string]int {
		out := map[string]int{}
		tbl := f.load(name)
		at, err := tbl.Scan().ToArrowTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer at.Release()
		tr := array.NewTableReader(at, 100)
		defer tr.Release()
		for tr.Next() {
			c := tr.RecordBatch().Column(tr.Schema().FieldIndices("country")[0]).(*array.String)
			for i := range c.Len() {
				out[c.Value(i)]++
			}
		}
		return out
	}
	if w := count("db.west"); w["fr"] != 10 || w["nl"] != 10 || len(w) != 2 {
		t.Fatalf("west = %v", w)
	}
	if e := count("db.east"); e["de"] != 10 || e["pl"] != 10 || e["nl"] != 10 || len(e) != 3 {
		t.Fatalf("east = %v", e)
	}
	// db.never got no rows, so it carries no marker and does not hold
	// the frontier back.
	fr, err := f.open(1).Frontier(context.Background())
	if err != nil || fr.Positions["p"] != 50 {
		t.Fatalf("frontier = %+v, %v", fr, err)
	}
	if c := step(t, tk, 2, batchV1("p", 50, 8)); len(c) != 2 {
		t.Fatalf("checkpoint 2 commits = %+v", c)
	}
	if fr, err = f.open(1).Frontier(context.Background()); err != nil || fr.Positions["p"] != 58 {
		t.Fatalf("frontier = %+v, %v", fr, err)
	}
}

// By default a record that reaches no table (a null route value, one no
// route-regex matches, a dynamic value naming no namespace.table) is
// skipped as the Apache Iceberg sink skips it: not rejected (no dead
// letter, no failed task), counted, and reported in the log at the
// checkpoint; the frontier moves past it.
func TestUnroutedRecordsAreSkipped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     map[string]string
		schema  *arrow.Schema
		fill    func(col string, off int64, b array.Builder) bool
		example string
	}{
		{"route-regex", map[string]string{keyTables: "db.west", keyRouteField: "country", prefixTable + "db.west" + suffixRouteRegex: "fr|nl|de|pl"}, schemaV1,
			func(col string, off int64, b array.Builder) bool {
				if col != "country" || off < 40 {
					return false
				}
				if off%2 == 0 {
					b.(*array.StringBuilder).Append("it")
				} else {
					b.AppendNull()
				}
				return true
			}, "it"},
		{"dynamic", map[string]string{keyTables: "", keyDynamic: "true", keyRouteField: "kind"}, schemaKind,
			func(col string, off int64, b array.Builder) bool {
				if col != "kind" {
					return false
				}
				if off < 40 {
					b.(*array.StringBuilder).Append("db.west")
				} else {
					b.(*array.StringBuilder).Append("orphan")
				}
				return true
			}, "orphan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			tk := f.open(1)
			var logs bytes.Buffer
			tk.log = slog.New(slog.NewTextHandler(&logs, nil))
			prepare(t, tk, 1, tc.schema)
			b := batchRows(tc.schema, 1, "p", 0, 50, tc.fill)
			if rejected := write(t, tk, 1, b); len(rejected) != 0 {
				t.Fatalf("rejected %d records (%+v), want them skipped", len(rejected), rejected[0])
			}
			flushCommit(t, tk, 1, []sdk.Range{{Partition: "p", From: 0, Next: 50}})
			if n := len(f.readRows("db.west")); n != 40 {
				t.Errorf("db.west holds %d rows, want 40", n)
			}
			out := logs.String()
			if !strings.Contains(out, "skipped=10") || !strings.Contains(out, "example_value="+tc.example) || !strings.Contains(out, keyUnrouted+"=reject") {
				t.Errorf("log does not report the 10 skipped records with an example and the way out:\n%s", out)
			}
			if n := tk.Skipped(1); n != 10 {
				t.Errorf("Skipped(1) = %d, want the 10 records for the host's metric", n)
			}
			if n := tk.Skipped(1); n != 0 {
				t.Errorf("a second Skipped(1) = %d, want 0: each record is counted once", n)
			}
			fr, err := f.open(1).Frontier(context.Background())
			if err != nil || fr.Positions["p"] != 50 {
				t.Fatalf("frontier = %+v, %v: the skipped records must not hold it back", fr, err)
			}
		})
	}
}

// Skipped counts each checkpoint's dropped records at that checkpoint's
// flush, even when Writes of the next one come first; with
// iceberg.tables.unrouted.log=false nothing is logged but the count still
// reaches the host.
func TestUnroutedCountPerCheckpoint(t *testing.T) {
	f := newFixture(t, map[string]string{keyTables: "db.west", keyRouteField: "country",
		prefixTable + "db.west" + suffixRouteRegex: "fr", keyUnroutedLog: "false"})
	tk := f.open(1)
	var logs bytes.Buffer
	tk.log = slog.New(slog.NewTextHandler(&logs, nil))
	prepare(t, tk, 1, schemaV1)
	// Offsets below 40 go to db.west; of the rest, every second one is
	// "it" and reaches no table.
	fill := func(col string, off int64, b array.Builder) bool {
		if col != "country" {
			return false
		}
		if off >= 40 && off%2 == 0 {
			b.(*array.StringBuilder).Append("it")
		} else {
			b.(*array.StringBuilder).Append("fr")
		}
		return true
	}
	write(t, tk, 1, batchRows(schemaV1, 1, "p", 0, 50, fill))  // 5 skipped
	write(t, tk, 2, batchRows(schemaV1, 1, "p", 50, 10, fill)) // 5 skipped, before Flush(1)
	if _, err := tk.Flush(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if n := tk.Skipped(1); n != 5 {
		t.Errorf("Skipped(1) = %d, want checkpoint 1's 5 (checkpoint 2's wait for Flush(2))", n)
	}
	if _, err := tk.Flush(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if n := tk.Skipped(2); n != 5 {
		t.Errorf("Skipped(2) = %d, want 5", n)
	}
	if strings.Contains(logs.String(), "skipped records") {
		t.Errorf("%s=false, yet the skipped records are logged:\n%s", keyUnroutedLog, logs.String())
	}
}

var schemaKind = withFields(schemaV1, arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true})

func TestDynamicTables(t *testing.T) {
	f := newFixture(t, map[string]string{
		keyTables:     "",
		keyDynamic:    "true",
		keyRouteField: "kind",
		keyUnrouted:   unroutedReject,
	})
	tk := f.open(1)
	if changes := prepare(t, tk, 1, schemaKind); len(changes) != 0 {
		t.Fatalf("changes = %q: no table is known before rows arrive", changes)
	}
	kinds := []string{"shop.orders", "Shop.Refunds", "orphan"}
	fill := func(col string, off int64, b array.Builder) bool {
		if col != "kind" {
			return false
		}
		b.(*array.StringBuilder).Append(kinds[off%3])
		return true
	}
	b := batchRows(schemaKind, 1, "p", 0, 30, fill)
	rejected := write(t, tk, 1, b)
	if len(rejected) != 10 || !strings.Contains(rejected[0].Reason, `kind = "orphan" does not name a table`) {
		t.Fatalf("rejected = %+v", rejected)
	}
	commits := flushCommit(t, tk, 1, []sdk.Range{{Partition: "p", From: 0, Next: 30}})
	if len(commits) != 2 {
		t.Fatalf("commits = %+v", commits)
	}
	if n := len(f.readRows("shop.orders")); n != 10 {
		t.Fatalf("orders: %d rows", n)
	}
	if n := len(f.readRows("shop.refunds")); n != 10 {
		t.Fatalf("refunds: %d rows", n)
	}

	// A restarted sink finds the dynamic tables by their marker.
	tk2 := f.open(1)
	fr, err := tk2.Frontier(context.Background())
	if err != nil || fr.Positions["p"] != 30 || fr.Checkpoint != 1 {
		t.Fatalf("frontier = %+v, %v", fr, err)
	}
	if tk2.knownTable("shop.orders") == nil || tk2.knownTable("shop.refunds") == nil {
		t.Fatal("Frontier did not load the dynamic tables")
	}
}

func TestRouteFieldErrors(t *testing.T) {
	f := newFixture(t, map[string]string{keyTables: "", keyDynamic: "true", keyRouteField: "nested.kind"})
	tk := f.open(1)
	b := batchV1("p", 0, 3)
	defer b.Records.Release()
	_, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: 1, Batch: b})
	if err == nil || !strings.Contains(err.Error(), "no field nested.kind") {
		t.Fatalf("err = %v", err)
	}
}

// The writer split: rows go to the writer the partitioner chose.
func TestWriterSplit(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(3)
	prepare(t, tk, 1, schemaV1)
	b := batchV1("p", 0, 90)
	writers := make([]uint32, 90)
	for i := range writers {
		writers[i] = uint32(i % 3)
	}
	if _, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: 1, Batch: b, Writers: writers}); err != nil {
		t.Fatal(err)
	}
	b.Records.Release()
	res, err := tk.Flush(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for _, r := range res {
		if r.Records != 30 || r.Files != 1 {
			t.Fatalf("result %+v", r)
		}
	}
	if _, err := tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 1, Ranges: []sdk.Range{{Partition: "p", From: 0, Next: 90}}, Results: res}); err != nil {
		t.Fatal(err)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 90}})

	bad := batchV1("p", 90, 2)
	defer bad.Records.Release()
	if _, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: 2, Batch: bad, Writers: []uint32{0, 3}}); err == nil {
		t.Fatal("writer index out of range accepted")
	}
}
