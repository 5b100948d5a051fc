package partspec

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestParse holds the rules both the iceberg sink and the hash
// partitioners follow for iceberg.tables.default-partition-by: before
// they shared this parser only one accepted void() and only the other
// rejected repeats.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		spec string
		want string // canonical terms, space separated
	}{
		{"day(ts)", "day(ts)"},
		{"days(ts), bucket(16, id)", "day(ts) bucket(16, id)"},
		{"date(ts), trunc(3, s)", "day(ts) truncate(3, s)"},
		{" identity(country) , hour(ts) ", "identity(country) hour(ts)"},
		{"hours(ts), bucket(16, id)", "hour(ts) bucket(16, id)"},
		{"country", "identity(country)"},
		{"month(ts),year(ts)", "month(ts) year(ts)"},
		{"years(ts), months(ts)", "year(ts) month(ts)"},
		{"truncate(10, name)", "truncate(10, name)"},
		{"truncate(name, 10)", "truncate(10, name)"},
		{"bucket(id, 8)", "bucket(8, id)"},
		{"BUCKET(8, id)", "bucket(8, id)"},
		{"identity(address.city)", "identity(address.city)"},
		{"void(x), customer.region", "void(x) identity(customer.region)"},
		{"", ""},
		{"  ", ""},
	} {
		terms, err := Parse(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		var got []string
		for _, term := range terms {
			got = append(got, term.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q = %q, want %q", c.spec, got, c.want)
		}
	}
	for spec, want := range map[string]string{
		"bucket(id)":                   "bucket takes a number and a column",
		"bucket(x, y)":                 "whole number",
		"bucket(0, id)":                "positive number",
		"bucket(-1, id)":               "positive number",
		"truncate(-3, s)":              "positive number",
		"truncate(x, name)":            "whole number",
		"weekday(ts)":                  `unknown transform "weekday"`,
		"zorder(a)":                    `unknown transform "zorder"`,
		"day(ts":                       "missing closing parenthesis",
		"day()":                        "empty column name",
		"day(ts, id)":                  "day takes one column",
		"day(ts, 1)":                   "day takes one column",
		"a..b":                         "empty part",
		"a b":                          "unexpected character",
		"day(ts), day(ts)":             "repeats partition field ts_day",
		"days(ts), date(ts)":           "repeats partition field ts_day",
		"bucket(4, id), bucket(8, id)": "repeats partition field id_bucket",
		"void(x), void(x)":             "repeats partition field x_null",
	} {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", spec, err, want)
			continue
		}
		// The error quotes the offending term, whichever it is.
		first := strings.TrimSpace(strings.SplitN(spec, "), ", 2)[0])
		if !strings.Contains(err.Error(), strings.TrimSuffix(first, ")")) {
			t.Errorf("%q: error %q does not quote the term", spec, err)
		}
	}
}

func TestTermTransform(t *testing.T) {
	terms, err := Parse("bucket(16, id), truncate(3, s), void(x), hour(ts), a.b")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		tf    iceberg.Transform
		field string
		void  bool
	}{
		{iceberg.BucketTransform{NumBuckets: 16}, "id_bucket", false},
		{iceberg.TruncateTransform{Width: 3}, "s_trunc", false},
		{iceberg.VoidTransform{}, "x_null", true},
		{iceberg.HourTransform{}, "ts_hour", false},
		{iceberg.IdentityTransform{}, "a_b", false},
	}
	for i, w := range want {
		if !terms[i].Transform.Equals(w.tf) || terms[i].FieldName() != w.field || terms[i].IsVoid() != w.void {
			t.Errorf("term %d %s: transform %s field %s void %v, want %s %s %v", i, terms[i].Text, terms[i].Transform, terms[i].FieldName(), terms[i].IsVoid(), w.tf, w.field, w.void)
		}
	}
}

func TestBind(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	terms, err := Parse("day(ts), bucket(16, id), void(name)")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Bind(sc, terms)
	if err != nil {
		t.Fatal(err)
	}
	if spec.NumFields() != 3 || spec.Field(0).Name != "ts_day" || spec.Field(1).Name != "id_bucket" || spec.Field(2).Name != "name_null" {
		t.Fatalf("spec = %s", spec)
	}
	if spec, err := Bind(sc, nil); err != nil || !spec.IsUnpartitioned() {
		t.Fatalf("no terms: %s, %v", spec, err)
	}
	for in, want := range map[string]string{
		"day(created_at)": `no column "created_at"`,
		"day(name)":       `column "name" is string, which day cannot partition`,
	} {
		terms, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Bind(sc, terms); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}
