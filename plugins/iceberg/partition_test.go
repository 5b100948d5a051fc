package iceberg

import (
	"context"
	"strings"
	"testing"

	icebergapi "github.com/apache/iceberg-go"

	"github.com/floehq/floe/sdk"
)

func TestPartitionedTables(t *testing.T) {
	f := newFixture(t, map[string]string{
		keyTables:        "db.by_day,db.by_bucket,db.by_country",
		keyDefaultPartBy: "day(ts)",
		prefixTable + "db.by_bucket" + suffixPartitionBy:  "bucket(16, id)",
		prefixTable + "db.by_country" + suffixPartitionBy: "identity(country)",
	})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	// 100 rows, one hour apart: 5 days, 4 countries, up to 16 buckets.
	commits := step(t, tk, 1, batchV1("p", 0, 100))
	if len(commits) != 3 {
		t.Fatalf("commits = %+v", commits)
	}
	files := map[string]int{}
	for _, c := range commits {
		files[c.Table] = c.Files
	}
	if files["db.by_day"] != 5 || files["db.by_country"] != 4 || files["db.by_bucket"] < 10 {
		t.Fatalf("files per table = %v", files)
	}
	checks := map[string]icebergapi.Transform{
		"db.by_day":     icebergapi.DayTransform{},
		"db.by_bucket":  icebergapi.BucketTransform{NumBuckets: 16},
		"db.by_country": icebergapi.IdentityTransform{},
	}
	for name, tr := range checks {
		tbl := f.load(name)
		spec := tbl.Spec()
		if spec.NumFields() != 1 || spec.Field(0).Transform != tr {
			t.Errorf("%s: spec %s, want %s", name, spec, tr)
		}
		f.checkExactlyOnce(name, map[string][2]int64{"p": {0, 100}})
		tasks, err := tbl.Scan().PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != files[name] {
			t.Errorf("%s: %d files planned, %d committed", name, len(tasks), files[name])
		}
	}
}

func TestPartitionColumnMissing(t *testing.T) {
	f := newFixture(t, map[string]string{keyDefaultPartBy: "day(created_at)"})
	tk := f.open(1)
	_, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: 1, Arrow: schemaV1})
	if err == nil || !strings.Contains(err.Error(), `no column "created_at"`) {
		t.Fatalf("err = %v", err)
	}
}
