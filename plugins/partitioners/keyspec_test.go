package partitioners

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/sdk"
)

// TestParsePartitionBy: the partitioners read the sink's spec with the
// sink's parser (lake/partspec, where the syntax is tested) and drop void
// terms, which put every row in one partition.
func TestParsePartitionBy(t *testing.T) {
	terms, err := parsePartitionBy("void(x), bucket(id, 16), customer.region")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, term := range terms {
		got = append(got, term.text+"→"+term.path+":"+term.tf.String())
	}
	if want := "bucket(id, 16)→id:bucket[16] customer.region→customer.region:identity"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %s", got, want)
	}
	// Repeats are rejected here as they are by the sink.
	if _, err := parsePartitionBy("day(ts), days(ts)"); err == nil || !strings.Contains(err.Error(), "repeats partition field ts_day") {
		t.Errorf("repeat: %v", err)
	}
}

func TestKeySpecFrom(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   map[string]string
		from  string
		byKey bool
		terms int
	}{
		{"nothing: the record key", nil, "the record key", true, 1},
		{"fields win", map[string]string{keyFields: "a, b.c", keyDefaultPartitionBy: "day(ts)"}, keyFields, false, 2},
		{"fields = __key", map[string]string{keyFields: "__key"}, keyFields, true, 1},
		{"default partition spec", map[string]string{keyDefaultPartitionBy: "day(ts)"}, keyDefaultPartitionBy, false, 1},
		{"the one table's own spec", map[string]string{keyTables: "db.orders", "iceberg.table.db.orders.partition-by": "bucket(8, id)", keyDefaultPartitionBy: "day(ts)"}, "iceberg.table.db.orders.partition-by", false, 1},
		{"two tables: the default", map[string]string{keyTables: "a,b", "iceberg.table.a.partition-by": "bucket(8, id)", keyDefaultPartitionBy: "day(ts)"}, keyDefaultPartitionBy, false, 1},
		{"only void: the record key", map[string]string{keyDefaultPartitionBy: "void(x)"}, "the record key", true, 1},
	} {
		ks, err := keySpecFrom(sdk.NewConfig(c.cfg))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if ks.from != c.from || ks.byKey != c.byKey || len(ks.terms) != c.terms {
			t.Errorf("%s: from %q byKey %v terms %d", c.name, ks.from, ks.byKey, len(ks.terms))
		}
	}

	ks, _ := keySpecFrom(sdk.NewConfig(map[string]string{keyDefaultPartitionBy: "day(ts), bucket(16, id)"}))
	if ks.bucket != 1 {
		t.Errorf("one bucket term: aligned index %d, want 1", ks.bucket)
	}
	ks, _ = keySpecFrom(sdk.NewConfig(map[string]string{keyDefaultPartitionBy: "bucket(4, a), bucket(16, id)"}))
	if ks.bucket != -1 {
		t.Errorf("two bucket terms: aligned index %d, want -1", ks.bucket)
	}
	if _, ok := ks.terms[0].tf.(iceberg.BucketTransform); !ok {
		t.Errorf("term 0 is %v", ks.terms[0].tf)
	}

	for key, cfg := range map[string]map[string]string{
		keyDefaultPartitionBy:             {keyDefaultPartitionBy: "month(ts), spline(x)"},
		"iceberg.table.db.t.partition-by": {keyTables: "db.t", "iceberg.table.db.t.partition-by": "bucket(id)"},
		keyFields:                         {keyFields: "a, .b"},
	} {
		_, err := keySpecFrom(sdk.NewConfig(cfg))
		if err == nil || !strings.HasPrefix(err.Error(), key+":") {
			t.Errorf("%v: error %v does not start with the key %s", cfg, err, key)
		}
	}
}
