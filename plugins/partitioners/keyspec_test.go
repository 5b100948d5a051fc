package partitioners

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/sdk"
)

func TestParsePartitionBy(t *testing.T) {
	for _, c := range []struct {
		spec string
		want string // path:transform, …
	}{
		{"day(ts)", "ts:day"},
		{"days(ts)", "ts:day"},
		{"date(ts), trunc(3, s)", "ts:day,s:truncate[3]"},
		{"hours(ts), bucket(16, id)", "ts:hour,id:bucket[16]"},
		{"bucket(id, 16)", "id:bucket[16]"},
		{"truncate(name, 10)", "name:truncate[10]"},
		{"truncate(10, name)", "name:truncate[10]"},
		{"country", "country:identity"},
		{"identity(country), year(ts), month(ts)", "country:identity,ts:year,ts:month"},
		{"void(x), customer.region", "customer.region:identity"},
		{"  ", ""},
	} {
		terms, err := parsePartitionBy(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		var got []string
		for _, term := range terms {
			got = append(got, term.path+":"+term.tf.String())
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%q: got %v, want %s", c.spec, got, c.want)
		}
	}
	for _, bad := range []string{"bucket(id)", "bucket(x, y)", "bucket(0, id)", "truncate(-3, s)", "zorder(a)", "day(ts", "day()", "a..b", "day(ts, 1)"} {
		if _, err := parsePartitionBy(bad); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: error %q does not quote the item", bad, err)
		}
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

func TestSplitTopLevel(t *testing.T) {
	got := splitTopLevel(" day(ts) , bucket(16, id),truncate(name,3) ")
	want := []string{"day(ts)", "bucket(16, id)", "truncate(name,3)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
}
