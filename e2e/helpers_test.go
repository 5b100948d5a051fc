package e2e

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/floehq/floe/e2e/harness"
)

// repoFile is a path in the repository.
func repoFile(t *testing.T, env harness.Env, rel string) string {
	t.Helper()
	if env.RepoDir == "" {
		t.Fatalf("cannot find the floe repository from the working directory")
	}
	return filepath.Join(env.RepoDir, rel)
}

// readBoth reads a table with PyIceberg and DuckDB and checks that they
// agree on everything both report: the metadata file, row count, distinct
// count, every checksum, the top-level column names and (through
// duckdbType) their types. PyIceberg goes through the catalog; DuckDB
// reads ref.Metadata when set, else the catalog's current metadata. It
// returns the PyIceberg read.
func readBoth(t *testing.T, env harness.Env, ref harness.TableRef, opts harness.ReadOptions) harness.TableRead {
	t.Helper()
	py := harness.ReadTable(t, env, harness.PyIceberg, ref, opts)
	duck := harness.ReadTable(t, env, harness.DuckDB, ref, opts)
	if py.Metadata != duck.Metadata {
		t.Errorf("%s: PyIceberg read metadata %s, DuckDB %s", ref.Name, py.Metadata, duck.Metadata)
	}
	if py.Rows != duck.Rows {
		t.Errorf("%s: PyIceberg reads %d rows, DuckDB %d", ref.Name, py.Rows, duck.Rows)
	}
	if (py.Distinct == nil) != (duck.Distinct == nil) || py.Distinct != nil && *py.Distinct != *duck.Distinct {
		t.Errorf("%s: distinct %v: PyIceberg %v, DuckDB %v", ref.Name, opts.DistinctCols, deref(py.Distinct), deref(duck.Distinct))
	}
	for _, c := range opts.ChecksumCols {
		if py.Checksum[c] != duck.Checksum[c] {
			t.Errorf("%s: checksum of %s: PyIceberg %s, DuckDB %s", ref.Name, c, py.Checksum[c], duck.Checksum[c])
		}
	}
	if !slices.Equal(py.Columns(), duck.Columns()) {
		t.Errorf("%s: columns differ:\n  PyIceberg %v\n  DuckDB    %v", ref.Name, py.Columns(), duck.Columns())
	} else {
		for i, c := range py.Schema {
			want, err := duckdbType(c[1])
			if err != nil {
				t.Errorf("%s: column %s: PyIceberg type %q: %v", ref.Name, c[0], c[1], err)
				continue
			}
			// DuckDB quotes struct field names that are keywords ("source").
			if got := duck.Schema[i][1]; strings.ReplaceAll(got, `"`, "") != want {
				t.Errorf("%s: column %s: PyIceberg reads %s, so DuckDB should read %s, but reads %s", ref.Name, c[0], c[1], want, got)
			}
		}
	}
	return py
}

func deref(p *int64) any {
	if p == nil {
		return "(none)"
	}
	return *p
}

// duckdbType maps a PyIceberg type as read_table.py prints it (Iceberg's
// type names) to the type DuckDB's iceberg_scan gives the same column.
func duckdbType(iceberg string) (string, error) {
	s := strings.TrimSpace(iceberg)
	simple := map[string]string{
		"boolean": "BOOLEAN", "int": "INTEGER", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
		"date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMP WITH TIME ZONE",
		"string": "VARCHAR", "uuid": "UUID", "binary": "BLOB",
	}
	if d, ok := simple[s]; ok {
		return d, nil
	}
	open := strings.IndexAny(s, "<(")
	if open < 0 || !strings.HasSuffix(s, ">") && !strings.HasSuffix(s, ")") {
		return "", fmt.Errorf("unknown type")
	}
	kind, inner := s[:open], s[open+1:len(s)-1]
	parts := splitTop(inner)
	switch kind {
	case "decimal":
		if len(parts) != 2 {
			return "", fmt.Errorf("decimal needs precision and scale")
		}
		return fmt.Sprintf("DECIMAL(%s,%s)", strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])), nil
	case "fixed":
		return "BLOB", nil
	case "list":
		e, err := duckdbType(inner)
		return e + "[]", err
	case "map":
		if len(parts) != 2 {
			return "", fmt.Errorf("map needs key and value")
		}
		k, err := duckdbType(parts[0])
		if err != nil {
			return "", err
		}
		v, err := duckdbType(parts[1])
		return fmt.Sprintf("MAP(%s, %s)", k, v), err
	case "struct":
		fields := make([]string, len(parts))
		for i, p := range parts {
			// "11: sku: required string"
			f := strings.SplitN(strings.TrimSpace(p), ": ", 3)
			if len(f) != 3 {
				return "", fmt.Errorf("struct field %q", p)
			}
			typ := strings.TrimPrefix(strings.TrimPrefix(f[2], "required "), "optional ")
			d, err := duckdbType(typ)
			if err != nil {
				return "", err
			}
			fields[i] = f[1] + " " + d
		}
		return "STRUCT(" + strings.Join(fields, ", ") + ")", nil
	}
	return "", fmt.Errorf("unknown type %q", kind)
}

// splitTop splits s at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// checkChecksums compares a read's checksums with expected values.
func checkChecksums(t *testing.T, r harness.TableRead, want map[string]string) {
	t.Helper()
	for _, c := range slices.Sorted(maps.Keys(want)) {
		if got := r.Checksum[c].String(); got != want[c] {
			t.Errorf("%s: checksum of column %s is %s, the generated records give %s", r.Table, c, got, want[c])
		}
	}
}

// withConfig returns a copy of c with the changes applied; an empty value
// removes the key.
func withConfig(c harness.Connector, changes map[string]string) harness.Connector {
	out := harness.Connector{Name: c.Name, Config: maps.Clone(c.Config), InitialState: c.InitialState}
	for k, v := range changes {
		if v == "" {
			delete(out.Config, k)
		} else {
			out.Config[k] = v
		}
	}
	return out
}

// proxied starts a TCP proxy to rawURL's host and returns it with rawURL
// pointed at it.
func proxied(t *testing.T, rawURL string) (*harness.TCPProxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		t.Fatalf("soak: %q is not a URL with a host to proxy: %v", rawURL, err)
	}
	p := harness.StartTCPProxy(t, u.Host)
	u.Host = p.Addr
	return p, u.String()
}
