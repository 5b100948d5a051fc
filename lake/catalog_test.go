package lake

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floehq/floe/sdk"
)

func TestCatalogConfigDefaults(t *testing.T) {
	c, err := ParseCatalogConfig(map[string]string{KeyDataDir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Type != CatalogSQL || c.Name != "floe" || c.Warehouse != "file:///data/warehouse" {
		t.Fatalf("defaults = %+v", c)
	}
	driver, dialect, dsn, err := c.sqlTarget()
	if err != nil || driver != "sqlite" && driver != "sqliteshim" || dialect != "sqlite" ||
		dsn != "file:/data/catalog.db?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)" {
		t.Fatalf("sql target = %s %s %s %v", driver, dialect, dsn, err)
	}
}

func TestCatalogConfigPostgres(t *testing.T) {
	c, err := ParseCatalogConfig(map[string]string{
		KeyCatalogURI: "postgres://floe@db:5432/cat", KeyWarehouse: "s3://lake/wh",
		KeyJDBCPassword: "s3cr3t", KeyCatalogNameAlt: "prod", PrefixCatalog + "s3.region": "eu-west-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	driver, dialect, dsn, err := c.sqlTarget()
	if err != nil || driver != "pgx" || dialect != "postgres" || dsn != "postgres://floe:s3cr3t@db:5432/cat" {
		t.Fatalf("sql target = %s %s %s %v", driver, dialect, dsn, err)
	}
	if c.Name != "prod" || c.Props["s3.region"] != "eu-west-1" || c.Props["jdbc.password"] != "" || c.Props["uri"] != "" {
		t.Fatalf("config = %+v", c)
	}
}

func TestCatalogConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  map[string]string
		want []string
	}{
		{"no data dir", map[string]string{}, []string{KeyCatalogURI, KeyDataDir}},
		{"no warehouse", map[string]string{KeyCatalogURI: "/x/catalog.db"}, []string{KeyWarehouse}},
		{"sql uri scheme", map[string]string{KeyDataDir: "/d", KeyCatalogURI: "mysql://x/y"}, []string{KeyCatalogURI, "postgres://"}},
		{"bad postgres url", map[string]string{KeyDataDir: "/d", KeyCatalogURI: "postgres://a:b@%zz/c"}, []string{KeyCatalogURI, "not a valid postgres URL"}},
		{"unknown type", map[string]string{KeyCatalogType: "nessie"}, []string{KeyCatalogType, "nessie"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCatalogConfig(c.cfg)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "b@") {
				t.Errorf("error %q echoes the password", err)
			}
		})
	}
}

func TestOpenEmbeddedCatalog(t *testing.T) {
	dir := t.TempDir()
	c, err := ParseCatalogConfig(map[string]string{KeyDataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cat, closeFn, err := OpenCatalog(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeFn() }()
	if cat.CatalogType() != "sql" {
		t.Fatalf("catalog type = %s", cat.CatalogType())
	}
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); err != nil {
		t.Fatalf("embedded catalog file: %v", err)
	}
}

func TestOpenCatalogWithoutBackends(t *testing.T) {
	c, err := ParseCatalogConfig(map[string]string{KeyCatalogType: "rest", KeyCatalogURI: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenCatalog(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "lake/backends") {
		t.Fatalf("err = %v, want a hint to link lake/backends", err)
	}
}

// TestCatalogNameThroughSpec reads the name as a plugin does, from the
// spec's config with defaults filled in: the Apache sink's iceberg.catalog
// must name the catalog, not be hidden by a default of iceberg.catalog.name.
func TestCatalogNameThroughSpec(t *testing.T) {
	spec := sdk.NewSpec(CatalogFields("Catalog")...)
	for _, tc := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{KeyCatalogNameAlt: "prod"}, "prod"},
		{map[string]string{KeyCatalogNameAlt: "prod", KeyCatalogName: "main"}, "main"},
		{map[string]string{}, DefaultCatalogName},
	} {
		c, err := ParseCatalogConfig(spec.Config(withDataDir(tc.cfg)).Map())
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != tc.want {
			t.Errorf("catalog name of %v = %q, want %q", tc.cfg, c.Name, tc.want)
		}
	}
}

func withDataDir(m map[string]string) map[string]string {
	m[KeyDataDir] = "/data"
	return m
}

// A libpq key=value DSN used to become a new SQLite file in the working
// directory named after the password; it is an error now that names the
// key and does not echo the value. JDBC URLs of the Apache sink's
// JdbcCatalog are read.
func TestCatalogURIForms(t *testing.T) {
	for _, uri := range []string{
		"host=db.example port=5432 dbname=catalog user=floe password=hunter2",
		"dbname=catalog password=hunter2",
		"jdbc:mysql://db/catalog",
	} {
		_, err := ParseCatalogConfig(map[string]string{KeyDataDir: t.TempDir(), KeyCatalogURI: uri})
		if err == nil || !strings.Contains(err.Error(), KeyCatalogURI) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("uri %q: %v, want an error naming %s without the password", uri, err, KeyCatalogURI)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		for _, e := range entries {
			if strings.Contains(e.Name(), "hunter2") {
				t.Errorf("a file named after the password appeared: %s", e.Name())
			}
		}
	}
	c, err := ParseCatalogConfig(map[string]string{KeyDataDir: "/data", KeyCatalogURI: "jdbc:postgresql://db:5432/cat", KeyJDBCPassword: "pw", KeyJDBCUser: "floe"})
	if err != nil {
		t.Fatal(err)
	}
	if driver, _, dsn, err := c.sqlTarget(); err != nil || driver != "pgx" || dsn != "postgresql://floe:pw@db:5432/cat" {
		t.Errorf("jdbc:postgresql: %s %s %v", driver, dsn, err)
	}
	c, err = ParseCatalogConfig(map[string]string{KeyDataDir: "/data", KeyCatalogURI: "jdbc:sqlite:/tmp/cat.db"})
	if err != nil {
		t.Fatal(err)
	}
	if driver, _, dsn, err := c.sqlTarget(); err != nil || driver == "pgx" || !strings.HasPrefix(dsn, "file:/tmp/cat.db") {
		t.Errorf("jdbc:sqlite: %s %s %v", driver, dsn, err)
	}
}
