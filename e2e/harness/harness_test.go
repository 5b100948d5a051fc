package harness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	m := ParseMetrics([]byte(`# HELP floe_records_in_total Records read.
# TYPE floe_records_in_total counter
floe_records_in_total{connector="a",task="0"} 10
floe_records_in_total{connector="a",task="1"} 5
floe_records_in_total{connector="ab",task="0"} 100
floe_commits_total{connector="a"} 3
`))
	if v, ok := m.Sum("floe_records_in_total", `connector="a"`); !ok || v != 15 {
		t.Errorf("Sum(records_in, connector=a) = %v, %v; want 15, true", v, ok)
	}
	if _, ok := m.Sum("floe_dead_letters_total"); ok {
		t.Errorf("Sum of an absent metric found something")
	}
}

func TestTableReadDecodesChecksums(t *testing.T) {
	var r TableRead
	doc := `{"engine": "duckdb", "rows": 3, "schema": [["id", "BIGINT"]],
		"checksum": {"id": 123456789012345678901234567890, "name": "00ff00ff00ff00ff"}, "distinct": 3}`
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatal(err)
	}
	sum, err := r.Sum("id")
	if err != nil || sum.String() != "123456789012345678901234567890" {
		t.Errorf("Sum(id) = %v, %v; want the exact integer", sum, err)
	}
	if r.Checksum["name"] != "00ff00ff00ff00ff" || *r.Distinct != 3 {
		t.Errorf("decoded %+v", r)
	}
	if _, err := r.Sum("name"); err == nil {
		t.Errorf("Sum of a hash checksum did not fail")
	}
}

func TestMetadataFrontierWalksTheLineage(t *testing.T) {
	doc := `{"format-version": 2, "current-schema-id": 1, "current-snapshot-id": 3,
		"schemas": [{"schema-id": 1, "fields": [
			{"id": 1, "name": "a", "required": true, "type": "long"},
			{"id": 2, "name": "s", "required": false, "type": {"type": "struct", "fields": [
				{"id": 3, "name": "x", "required": false, "type": "string"}]}}]}],
		"snapshots": [
			{"snapshot-id": 1, "summary": {"floe.connector": "c", "floe.offsets": "{\"t/0\": 5}"}},
			{"snapshot-id": 2, "parent-snapshot-id": 1, "summary": {"floe.connector": "c", "floe.offsets": "{\"t/0\": 9, \"t/1\": 2}"}},
			{"snapshot-id": 3, "parent-snapshot-id": 2, "summary": {"operation": "replace"}},
			{"snapshot-id": 4, "parent-snapshot-id": 2, "summary": {"floe.connector": "c", "floe.offsets": "{\"t/0\": 99}"}}]}`
	path := filepath.Join(t.TempDir(), "v3.metadata.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	md := LoadMetadata(t, "file://"+path)
	fr, commits, err := md.Frontier("c")
	if err != nil {
		t.Fatal(err)
	}
	// Snapshot 4 is not in the current lineage (3 → 2 → 1).
	if fr["t/0"] != 9 || fr["t/1"] != 2 || commits != 2 || SumFrontier(fr) != 11 {
		t.Errorf("Frontier = %v, %d commits; want t/0:9 t/1:2 from snapshot 2, 2 commits", fr, commits)
	}
	s, err := md.CurrentSchema()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := s.Field("s", "x"); err != nil || f.Required || f.TypeName() != "string" {
		t.Errorf("Field(s, x) = %+v, %v", f, err)
	}
	if _, err := s.Field("a", "b"); err == nil || !strings.Contains(err.Error(), "not a struct") {
		t.Errorf("Field(a, b) of a long: %v, want not a struct", err)
	}
}

// TestHashSumMatchesReadTable checks the Go checksum against
// read_table.py's own, when the readers are installed.
func TestHashSumMatchesReadTable(t *testing.T) {
	env := Require(t, Readers)
	values := []string{"", "a", "héllo", "customer42@example.com"}
	var h HashSum
	for _, v := range values {
		h.AddString(v)
	}
	h.AddNull()
	h.AddInt64(-1_000_000)
	script := `
import sys, struct
sys.path.insert(0, sys.argv[1])
import pyarrow as pa
import read_table as rt
s = rt.Checksum()
s.add(pa.array(["", "a", "héllo", "customer42@example.com", None]))
t = rt.Checksum()
t.add(pa.array([-1000], type=pa.timestamp("us")))
print(f"{(s.value + t.value) % 2**64:016x}")
`
	out, err := exec.Command(env.Python, "-c", script, filepath.Dir(env.ReadTable)).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != h.Hex() {
		t.Errorf("read_table.py's checksum %s, HashSum %s", got, h.Hex())
	}
}
