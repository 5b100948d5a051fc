package harness

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/blake2b"
)

// Engine is a reader engine of e2e/readers/read_table.py.
type Engine string

// Engines.
const (
	PyIceberg Engine = "pyiceberg"
	DuckDB    Engine = "duckdb"
)

// Engines lists both engines, for tests that check they agree.
var Engines = []Engine{PyIceberg, DuckDB}

// TableRef names a table in a SQL catalog.
type TableRef struct {
	// CatalogURI is a postgres:// URL or a SQLite file path.
	CatalogURI string
	// Warehouse is the catalog's warehouse path or file:// URI.
	Warehouse string
	// CatalogName is the catalog's name in the SQL catalog tables
	// (default floe, as the iceberg sink's).
	CatalogName string
	// Name is namespace.table.
	Name string
	// Metadata, when set, is the metadata.json DuckDB reads instead of
	// the one the catalog names.
	Metadata string
	// CatalogType is "sql" (the default) or "rest"; a rest catalog is
	// reached at CatalogURI with Credential (OAuth2 client credentials)
	// or Token.
	CatalogType       string
	Credential, Token string
	// S3 is the object store of s3:// table files (nil: local files).
	S3 *Lake
}

// EmbeddedTable is a table of a worker's embedded catalog: the SQLite
// file data.dir/catalog.db, warehouse data.dir/warehouse.
func EmbeddedTable(dataDir, name string) TableRef {
	return TableRef{
		CatalogURI: filepath.Join(dataDir, "catalog.db"),
		Warehouse:  filepath.Join(dataDir, "warehouse"),
		Name:       name,
	}
}

// ReadOptions says what ReadTable computes besides the row count.
type ReadOptions struct {
	// ChecksumCols are the columns to checksum: integer and boolean
	// columns give the exact sum of their non-null values; others the
	// [HashSum] of their values.
	ChecksumCols []string
	// DistinctCols counts the distinct combinations of these columns.
	DistinctCols []string
	// ValuesCols are columns whose values the reader prints row by row
	// (TableRead.Values), nested ones too.
	ValuesCols []string
	// Timeout bounds the reader (default 5 minutes).
	Timeout time.Duration
}

// TableRead is read_table.py's JSON answer.
type TableRead struct {
	Engine   string `json:"engine"`
	Table    string `json:"table"`
	Metadata string `json:"metadata"`
	Rows     int64  `json:"rows"`
	// Schema is the top-level columns with the engine's own type names.
	Schema [][2]string `json:"schema"`
	// Checksum holds an integer (exact, maybe beyond 2^53) or 16 hex
	// digits per column.
	Checksum map[string]Checksum `json:"checksum"`
	// Distinct is set when DistinctCols were given.
	Distinct *int64 `json:"distinct"`
	// Values holds each of ValuesCols' values in read order (index i is
	// the same row in every column): bytes as {"hex": "…"}, structs as
	// objects, lists in order, maps as [key, value] pairs.
	Values map[string][]json.RawMessage `json:"values"`
}

// Column returns the engine's type name of a top-level column.
func (r TableRead) Column(name string) (string, bool) {
	for _, c := range r.Schema {
		if c[0] == name {
			return c[1], true
		}
	}
	return "", false
}

// Columns returns the top-level column names in order.
func (r TableRead) Columns() []string {
	out := make([]string, len(r.Schema))
	for i, c := range r.Schema {
		out[i] = c[0]
	}
	return out
}

// Sum returns an integer column's checksum (its exact sum).
func (r TableRead) Sum(col string) (*big.Int, error) {
	n, ok := r.Checksum[col]
	if !ok {
		return nil, fmt.Errorf("%s read of %s: no checksum of column %s", r.Engine, r.Table, col)
	}
	v, ok := new(big.Int).SetString(string(n), 10)
	if !ok {
		return nil, fmt.Errorf("%s read of %s: checksum of %s is %q, not an integer sum", r.Engine, r.Table, col, n)
	}
	return v, nil
}

// Checksum is one column's checksum as read_table.py prints it: the
// decimal text of an integer sum, or 16 hex digits.
type Checksum string

// UnmarshalJSON takes a JSON number (kept as its exact text) or string.
func (c *Checksum) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Checksum(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("checksum %s: %w", b, err)
	}
	*c = Checksum(n)
	return nil
}

func (c Checksum) String() string { return string(c) }

// ReadTable reads ref with engine through read_table.py and returns its
// answer. It fails the test if the reader fails, printing its stderr.
func ReadTable(t testing.TB, env Env, engine Engine, ref TableRef, opts ReadOptions) TableRead {
	t.Helper()
	if env.Python == "" || env.ReadTable == "" {
		t.Fatalf("harness: ReadTable needs FLOE_PYTHON and FLOE_READ_TABLE (Require(t, harness.Readers))")
	}
	args := []string{env.ReadTable, "--engine", string(engine), "--table", ref.Name, "--json"}
	if ref.CatalogURI != "" {
		args = append(args, "--catalog-uri", ref.CatalogURI)
	}
	if ref.Warehouse != "" {
		args = append(args, "--warehouse", ref.Warehouse)
	}
	if ref.CatalogName != "" {
		args = append(args, "--catalog-name", ref.CatalogName)
	}
	if ref.Metadata != "" {
		args = append(args, "--metadata", ref.Metadata)
	}
	if ref.CatalogType != "" {
		args = append(args, "--catalog-type", ref.CatalogType)
	}
	if ref.Credential != "" {
		args = append(args, "--credential", ref.Credential)
	}
	if ref.Token != "" {
		args = append(args, "--token", ref.Token)
	}
	if ref.S3 != nil {
		args = append(args, "--s3-endpoint", ref.S3.S3Endpoint, "--s3-access-key", ref.S3.S3AccessKey,
			"--s3-secret-key", ref.S3.S3SecretKey, "--s3-region", ref.S3.S3Region)
	}
	if len(opts.ChecksumCols) > 0 {
		args = append(args, "--checksum-col", strings.Join(opts.ChecksumCols, ","))
	}
	if len(opts.DistinctCols) > 0 {
		args = append(args, "--distinct-cols", strings.Join(opts.DistinctCols, ","))
	}
	if len(opts.ValuesCols) > 0 {
		args = append(args, "--values-cols", strings.Join(opts.ValuesCols, ","))
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Python, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness: %s read of %s failed: %v\n%s %s\nstderr:\n%s", engine, ref.Name, err, env.Python, strings.Join(args, " "), stderr.String())
	}
	var out TableRead
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("harness: %s read of %s: decode the reader's JSON: %v\nstdout: %s\nstderr: %s", engine, ref.Name, err, stdout.String(), stderr.String())
	}
	t.Logf("harness: %s read %s: %d rows in %s", engine, ref.Name, out.Rows, time.Since(start).Round(time.Millisecond))
	return out
}

// HashSum computes read_table.py's checksum of a non-integer column in
// Go: the sum mod 2^64 of the 8-byte BLAKE2b hash (little-endian) of each
// value's canonical bytes; a null hashes the bytes "\xffNULL". The zero
// value is an empty sum.
type HashSum struct {
	sum uint64
}

// nullHashInput is read_table.py's NULL_HASH_INPUT.
var nullHashInput = []byte("\xffNULL")

// Add adds one value's canonical bytes (a string's UTF-8 bytes, a
// binary's bytes).
func (h *HashSum) Add(b []byte) {
	d, _ := blake2b.New(8, nil)
	d.Write(b)
	h.sum += binary.LittleEndian.Uint64(d.Sum(nil))
}

// AddString adds a string value.
func (h *HashSum) AddString(s string) { h.Add([]byte(s)) }

// AddNull adds a null.
func (h *HashSum) AddNull() { h.Add(nullHashInput) }

// Hex is the checksum as read_table.py prints it: 16 hex digits.
func (h *HashSum) Hex() string { return fmt.Sprintf("%016x", h.sum) }

// TableMetadata is the part of an Iceberg table metadata file the tests
// look at.
type TableMetadata struct {
	Location          string            `json:"location"`
	FormatVersion     int               `json:"format-version"`
	CurrentSchemaID   int               `json:"current-schema-id"`
	Schemas           []MetadataSchema  `json:"schemas"`
	CurrentSnapshotID *int64            `json:"current-snapshot-id"`
	Snapshots         []Snapshot        `json:"snapshots"`
	Properties        map[string]string `json:"properties"`
}

// MetadataSchema is one schema of a table.
type MetadataSchema struct {
	SchemaID int             `json:"schema-id"`
	Fields   []MetadataField `json:"fields"`
}

// MetadataField is a field of a schema or of a struct type. Type is a
// primitive's name ("long", "string") or a nested type's object.
type MetadataField struct {
	ID       int             `json:"id"`
	Name     string          `json:"name"`
	Required bool            `json:"required"`
	Type     json.RawMessage `json:"type"`
}

// Snapshot is one snapshot of a table.
type Snapshot struct {
	SnapshotID       int64             `json:"snapshot-id"`
	ParentSnapshotID *int64            `json:"parent-snapshot-id"`
	SequenceNumber   int64             `json:"sequence-number"`
	TimestampMs      int64             `json:"timestamp-ms"`
	Summary          map[string]string `json:"summary"`
}

// LoadMetadata reads a metadata.json file (a path or file:// location,
// as TableRead.Metadata names it).
func LoadMetadata(t testing.TB, location string) TableMetadata {
	t.Helper()
	return LoadMetadataIn(t, Lake{}, location)
}

// LoadMetadataIn reads a metadata.json file, also an s3:// one of the
// lake's object store (from its folder: versitygw keeps object
// bucket/key at <root>/bucket/key).
func LoadMetadataIn(t testing.TB, lake Lake, location string) TableMetadata {
	t.Helper()
	path := strings.TrimPrefix(strings.TrimPrefix(location, "file://"), "file:")
	if strings.HasPrefix(location, "s3://") {
		if lake.S3Root == "" {
			t.Fatalf("harness: table metadata %s is in S3 and no lake was given", location)
		}
		path = lake.LocalPath(location)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("harness: table metadata: %v", err)
	}
	var md TableMetadata
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatalf("harness: table metadata %s: %v", path, err)
	}
	return md
}

// CurrentSchema returns the table's current schema.
func (m TableMetadata) CurrentSchema() (MetadataSchema, error) {
	for _, s := range m.Schemas {
		if s.SchemaID == m.CurrentSchemaID {
			return s, nil
		}
	}
	return MetadataSchema{}, fmt.Errorf("table metadata: no schema with the current id %d", m.CurrentSchemaID)
}

// Field finds a field by its path: top-level name, then struct field
// names.
func (s MetadataSchema) Field(path ...string) (MetadataField, error) {
	fields := s.Fields
	var f MetadataField
	for i, name := range path {
		found := false
		for _, c := range fields {
			if c.Name == name {
				f, found = c, true
				break
			}
		}
		if !found {
			return MetadataField{}, fmt.Errorf("no field %q in %s", name, strings.Join(path[:i], "."))
		}
		if i < len(path)-1 {
			var st struct {
				Type   string          `json:"type"`
				Fields []MetadataField `json:"fields"`
			}
			if json.Unmarshal(f.Type, &st) != nil || st.Type != "struct" {
				return MetadataField{}, fmt.Errorf("field %s is a %s, not a struct", strings.Join(path[:i+1], "."), f.Type)
			}
			fields = st.Fields
		}
	}
	return f, nil
}

// TypeName is a primitive field's type ("long"), or a nested type's
// JSON.
func (f MetadataField) TypeName() string {
	var s string
	if json.Unmarshal(f.Type, &s) == nil {
		return s
	}
	return string(f.Type)
}

// Snapshot returns the snapshot with id.
func (m TableMetadata) Snapshot(id int64) (Snapshot, bool) {
	for _, s := range m.Snapshots {
		if s.SnapshotID == id {
			return s, true
		}
	}
	return Snapshot{}, false
}

// Lineage returns the current snapshot and its ancestors, newest first.
func (m TableMetadata) Lineage() []Snapshot {
	var out []Snapshot
	if m.CurrentSnapshotID == nil {
		return nil
	}
	id := *m.CurrentSnapshotID
	for {
		s, ok := m.Snapshot(id)
		if !ok {
			return out
		}
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			return out
		}
		id = *s.ParentSnapshotID
	}
}

// Frontier returns floe's committed frontier of connector in this table:
// the floe.offsets of the newest snapshot in the current lineage whose
// floe.connector is connector, and the number of such snapshots (floe
// commits). An empty map and 0 when floe never committed.
func (m TableMetadata) Frontier(connector string) (map[string]int64, int, error) {
	var frontier map[string]int64
	commits := 0
	for _, s := range m.Lineage() {
		if s.Summary["floe.connector"] != connector {
			continue
		}
		commits++
		if frontier != nil {
			continue
		}
		raw := s.Summary["floe.offsets"]
		if err := json.Unmarshal([]byte(raw), &frontier); err != nil {
			return nil, 0, fmt.Errorf("snapshot %d: floe.offsets %q: %w", s.SnapshotID, raw, err)
		}
	}
	if frontier == nil {
		frontier = map[string]int64{}
	}
	return frontier, commits, nil
}

// CheckLineage checks the connector's commits in the current lineage,
// oldest first: every floe.checkpoint is above the one before, every
// partition's position in floe.offsets never goes back (and a commit
// keeps every partition the one before had), and floe.committer.epoch
// never goes back. A commit that applied a user's offset override
// (floe.offsets.reset) may move positions anywhere.
func (m TableMetadata) CheckLineage(connector string) error {
	lineage := m.Lineage()
	var prev map[string]int64
	var prevCkpt, prevEpoch int64
	for i := len(lineage) - 1; i >= 0; i-- {
		s := lineage[i]
		if s.Summary["floe.connector"] != connector {
			continue
		}
		var offs map[string]int64
		if err := json.Unmarshal([]byte(s.Summary["floe.offsets"]), &offs); err != nil {
			return fmt.Errorf("snapshot %d: floe.offsets: %w", s.SnapshotID, err)
		}
		ckpt, err := strconv.ParseInt(s.Summary["floe.checkpoint"], 10, 64)
		if err != nil {
			return fmt.Errorf("snapshot %d: floe.checkpoint %q: %w", s.SnapshotID, s.Summary["floe.checkpoint"], err)
		}
		epoch, err := strconv.ParseInt(s.Summary["floe.committer.epoch"], 10, 64)
		if err != nil {
			return fmt.Errorf("snapshot %d: floe.committer.epoch %q: %w", s.SnapshotID, s.Summary["floe.committer.epoch"], err)
		}
		if prev != nil {
			if ckpt <= prevCkpt {
				return fmt.Errorf("snapshot %d: checkpoint %d after checkpoint %d", s.SnapshotID, ckpt, prevCkpt)
			}
			if epoch < prevEpoch {
				return fmt.Errorf("snapshot %d: committer epoch %d after epoch %d: a superseded committer committed", s.SnapshotID, epoch, prevEpoch)
			}
			if s.Summary["floe.offsets.reset"] != "true" {
				for p, n := range prev {
					if got, ok := offs[p]; !ok || got < n {
						return fmt.Errorf("snapshot %d (checkpoint %d): partition %s went from %d back to %d", s.SnapshotID, ckpt, p, n, got)
					}
				}
			}
		}
		prev, prevCkpt, prevEpoch = offs, ckpt, epoch
	}
	return nil
}

// SumFrontier adds a frontier's positions.
func SumFrontier(f map[string]int64) int64 {
	var n int64
	for _, v := range f {
		n += v
	}
	return n
}

// Itoa is strconv.Itoa, for building config values.
func Itoa(n int) string { return strconv.Itoa(n) }
