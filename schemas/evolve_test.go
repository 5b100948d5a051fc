package schemas

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// rec builds a record schema text from field JSON.
func rec(fields ...string) string {
	return `{"type":"record","name":"R","namespace":"t","fields":[` + strings.Join(fields, ",") + `]}`
}

func TestPlanEvolution(t *testing.T) {
	addr := func(extra string) string {
		f := `{"name":"street","type":"string"}`
		if extra != "" {
			f += "," + extra
		}
		return `{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"address","type":{"type":"record","name":"A","fields":[` + f + `]}}]}}`
	}
	tests := []struct {
		name    string
		table   string
		record  string
		changes []string
	}{
		{"identical", rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"long"}`), nil},
		{"add top-level required field as optional",
			rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"long"}`, `{"name":"b","type":"string","doc":"bee"}`),
			[]string{`add optional column b string ("bee")`}},
		{"add field in front", rec(`{"name":"a","type":"long"}`), rec(`{"name":"z","type":["null","int"]}`, `{"name":"a","type":"long"}`),
			[]string{"add optional column z int"}},
		{"add nested field", rec(addr("")), rec(addr(`{"name":"zip","type":"string"}`)),
			[]string{"add optional column customer.address.zip string"}},
		{"add struct column", rec(`{"name":"a","type":"long"}`),
			rec(`{"name":"a","type":"long"}`, `{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}}`),
			[]string{"add optional column s struct<3: x: required int>"}},
		{"add field to struct in list",
			rec(`{"name":"l","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"x","type":"int"}]}}}`),
			rec(`{"name":"l","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}}}`),
			[]string{"add optional column l.element.y int"}},
		{"add field to struct in map",
			rec(`{"name":"m","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"x","type":"int"}]}}}`),
			rec(`{"name":"m","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}}}`),
			[]string{"add optional column m.value.y string"}},
		{"widen int to long", rec(`{"name":"n","type":"int"}`), rec(`{"name":"n","type":"long"}`), []string{"widen column n from int to long"}},
		{"widen float to double", rec(`{"name":"n","type":"float"}`), rec(`{"name":"n","type":"double"}`), []string{"widen column n from float to double"}},
		{"widen decimal precision",
			rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}}`),
			rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}}`),
			[]string{"widen column d from decimal(10, 2) to decimal(12, 2)"}},
		{"widen list element", rec(`{"name":"l","type":{"type":"array","items":"int"}}`), rec(`{"name":"l","type":{"type":"array","items":"long"}}`),
			[]string{"widen column l.element from int to long"}},
		{"make optional", rec(`{"name":"a","type":"string"}`), rec(`{"name":"a","type":["null","string"]}`), []string{"make column a optional"}},
		{"make nested optional and widen", rec(`{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}}`),
			rec(`{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":["null","long"]}]}}`),
			[]string{"make column s.x optional", "widen column s.x from int to long"}},
		{"make list element optional", rec(`{"name":"l","type":{"type":"array","items":"int"}}`), rec(`{"name":"l","type":{"type":"array","items":["null","int"]}}`),
			[]string{"make column l.element optional"}},
		{"narrower int into long column", rec(`{"name":"n","type":"long"}`), rec(`{"name":"n","type":"int"}`), nil},
		{"narrower float into double column", rec(`{"name":"n","type":"double"}`), rec(`{"name":"n","type":"float"}`), nil},
		{"narrower decimal", rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}}`),
			rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}`), nil},
		{"required field into optional column", rec(`{"name":"a","type":["null","string"]}`), rec(`{"name":"a","type":"string"}`), nil},
		{"optional column missing from record", rec(`{"name":"a","type":"long"}`, `{"name":"b","type":["null","string"]}`), rec(`{"name":"a","type":"long"}`), nil},
		{"enum gets new symbols", rec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}}`),
			rec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}`), nil},
		{"map value stays optional", rec(`{"name":"m","type":{"type":"map","values":"int"}}`), rec(`{"name":"m","type":{"type":"map","values":"int"}}`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := mustIceberg(t, tt.table)
			incoming, err := ArrowSchema(mustParse(t, tt.record))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := PlanEvolution(tbl, incoming)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range ev.Changes {
				got = append(got, c.String())
			}
			if !equalStrings(got, tt.changes) {
				t.Errorf("changes:\n got %q\nwant %q", got, tt.changes)
			}
			if ev.Empty() != (len(tt.changes) == 0) {
				t.Errorf("Empty() = %v", ev.Empty())
			}
		})
	}
}

func TestPlanEvolutionIncompatible(t *testing.T) {
	tests := []struct {
		name       string
		table      string
		record     string
		path       string
		tableType  string
		recordType string
	}{
		{"type change", rec(`{"name":"a","type":"string"}`), rec(`{"name":"a","type":"int"}`), "a", "string", "int"},
		{"long to double", rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"double"}`), "a", "long", "double"},
		{"string to binary", rec(`{"name":"a","type":"string"}`), rec(`{"name":"a","type":"bytes"}`), "a", "string", "binary"},
		{"decimal scale", rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}}`),
			rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}}`), "d", "decimal(10, 2)", "decimal(10, 3)"},
		{"nested type change",
			rec(`{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"address","type":{"type":"record","name":"A","fields":[{"name":"zip","type":"int"}]}}]}}`),
			rec(`{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"address","type":{"type":"record","name":"A","fields":[{"name":"zip","type":"string"}]}}]}}`),
			"customer.address.zip", "int", "string"},
		{"struct to primitive", rec(`{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}}`), rec(`{"name":"s","type":"string"}`),
			"s", "struct<2: x: required int>", "string"},
		{"list to map", rec(`{"name":"l","type":{"type":"array","items":"int"}}`), rec(`{"name":"l","type":{"type":"map","values":"int"}}`),
			"l", "list<int>", "map<string, int>"},
		{"required column missing",
			rec(`{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"id","type":"long"},{"name":"zip","type":"string"}]}}`),
			rec(`{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"id","type":"long"}]}}`),
			"customer.zip", "required string", "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			incoming, err := ArrowSchema(mustParse(t, tt.record))
			if err != nil {
				t.Fatal(err)
			}
			_, err = PlanEvolution(mustIceberg(t, tt.table), incoming)
			var ie *IncompatibleError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want *IncompatibleError", err)
			}
			if ie.Path != tt.path || ie.TableType != tt.tableType || ie.RecordType != tt.recordType || ie.Reason == "" {
				t.Errorf("got %+v, want path %s table %s record %s", ie, tt.path, tt.tableType, tt.recordType)
			}
			for _, s := range []string{tt.path, tt.tableType, tt.recordType} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
}

func TestEvolutionApplyRejectsUnknownKind(t *testing.T) {
	ev := Evolution{Changes: []Change{{Kind: "rename", Path: []string{"a"}}}}
	if err := ev.Apply(nil); err == nil {
		t.Error("nil UpdateSchema accepted")
	}
	if ev.String() != "rename a" {
		t.Errorf("String() = %q", ev.String())
	}
	if (Evolution{}).String() != "no schema change" {
		t.Errorf("empty String() = %q", Evolution{}.String())
	}
}

func mustIceberg(t *testing.T, avroText string) *iceberg.Schema {
	t.Helper()
	as, err := ArrowSchema(mustParse(t, avroText))
	if err != nil {
		t.Fatal(err)
	}
	is, err := IcebergSchema(as)
	if err != nil {
		t.Fatal(err)
	}
	return is
}
