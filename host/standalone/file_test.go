package standalone

import (
	"maps"
	"strings"
	"testing"

	"github.com/floehq/floe/host/worker"
)

func TestParseConnector(t *testing.T) {
	for _, tc := range []struct {
		name, file, data string
		want             Connector
	}{
		{"connect shape", "x/orders.json",
			`{"name": "orders", "config": {"connector.class": "iceberg", "tasks.max": "2"}}`,
			Connector{Name: "orders", Config: map[string]string{"name": "orders", "connector.class": "iceberg", "tasks.max": "2"}}},
		{"initial state", "x/orders.json",
			`{"name": "orders", "config": {"connector.class": "iceberg"}, "initial_state": "paused"}`,
			Connector{Name: "orders", Config: map[string]string{"name": "orders", "connector.class": "iceberg"}, InitialState: worker.StatePaused}},
		{"name from the file", "x/clicks.json",
			`{"config": {"connector.class": "iceberg"}}`,
			Connector{Name: "clicks", Config: map[string]string{"name": "clicks", "connector.class": "iceberg"}}},
		{"flat", "x/f.json",
			`{"name": "flat", "connector.class": "iceberg", "tasks.max": 4, "iceberg.tables.auto-create-enabled": true}`,
			Connector{Name: "flat", Config: map[string]string{"name": "flat", "connector.class": "iceberg", "tasks.max": "4", "iceberg.tables.auto-create-enabled": "true"}}},
		{"flat without name", "x/f.json", `{"connector.class": "iceberg"}`,
			Connector{Name: "f", Config: map[string]string{"name": "f", "connector.class": "iceberg"}}},
		{"config name agrees", "x/a.json", `{"name": "a", "config": {"name": "a"}}`,
			Connector{Name: "a", Config: map[string]string{"name": "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConnector(tc.file, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.InitialState == "" {
				tc.want.InitialState = worker.StateRunning
			}
			if got.Name != tc.want.Name || got.InitialState != tc.want.InitialState || !maps.Equal(got.Config, tc.want.Config) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseConnectorErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		parts      []string
	}{
		{"trailing comma", "{\n  \"name\": \"o\",\n  \"config\": {\"a\": \"b\",}\n}", []string{"c.json", "line 3, column 23", "check the JSON"}},
		{"missing colon", "{\n  \"name\" \"o\"\n}", []string{"line 2, column 10"}},
		{"ends early", "{\"name\": \"o\",\n \"config\": {", []string{"line 2, column 13", "ends early"}},
		{"empty", "  ", []string{"empty"}},
		{"not an object", "[1]", []string{"line 1, column 1", "JSON object"}},
		{"trailing text", `{"name": "o"} x`, []string{"line 1, column 15", "after top-level value"}},
		{"nested value", "{\"name\": \"o\", \"config\": {\n  \"a\": {\"b\": 1}}}", []string{"line 2, column 8", `"a" is an object`}},
		{"null value", `{"name": "o", "config": {"a": null}}`, []string{"line 1, column 31", `"a" is null`}},
		{"array in flat file", `{"name": "o", "topics": ["a"]}`, []string{`"topics" is an array`, "flat connector file"}},
		{"unknown top-level key", `{"name": "o", "config": {}, "tasks.max": "1"}`, []string{`unknown key "tasks.max"`, "move"}},
		{"name mismatch", `{"name": "o", "config": {"name": "p"}}`, []string{`"name" (p) differs`}},
		{"bad state", `{"name": "o", "config": {}, "initial_state": "ASLEEP"}`, []string{"line 1, column 46", "RUNNING, PAUSED, STOPPED"}},
		{"duplicate key", `{"name": "o", "config": {"a": "1", "a": "2"}}`, []string{`key "a" appears twice`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConnector("dir/c.json", []byte(tc.data))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "connector file dir/c.json") {
				t.Errorf("error does not name the file: %v", err)
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q lacks %q", err, p)
				}
			}
		})
	}
}

func TestLoadConnectorMissing(t *testing.T) {
	_, err := LoadConnector(t.TempDir() + "/nope.json")
	if err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Fatalf("err = %v", err)
	}
}
