package iceberg

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// Every problem is named by its key, with what to do, both at Open
// (parseSettings) and in the spec's validation (config/validate), which
// shows it under that key.
func TestConfigErrors(t *testing.T) {
	base := map[string]string{keyTables: "db.t", keyDataDir: "/tmp/x"}
	cases := []struct {
		name string
		set  map[string]string
		key  string   // the key validation shows the error under
		want []string // all must appear in the error
	}{
		{"no tables", map[string]string{keyTables: ""}, keyTables, []string{keyTables, "at least one table", keyDynamic}},
		{"bad table name", map[string]string{keyTables: "orders"}, keyTables, []string{keyTables, `"orders"`, "namespace.table"}},
		{"duplicate table", map[string]string{keyTables: "db.t, db.t"}, keyTables, []string{"listed twice"}},
		{"catalog type", map[string]string{keyCatalogType: "nessie"}, keyCatalogType, []string{keyCatalogType, "must be one of"}},
		{"partition by", map[string]string{keyDefaultPartBy: "bucket(id)"}, keyDefaultPartBy, []string{keyDefaultPartBy, "bucket(16, id)"}},
		{"table partition by", map[string]string{prefixTable + "db.t.partition-by": "days(ts"}, "iceberg.table.db.t.partition-by", []string{"iceberg.table.db.t.partition-by", "parenthesis"}},
		{"unknown per-table key", map[string]string{prefixTable + "db.t.id-columns": "id"}, "iceberg.table.db.t.id-columns", []string{"iceberg.table.db.t.id-columns", "unknown per-table setting"}},
		{"dynamic without field", map[string]string{keyDynamic: "true"}, keyRouteField, []string{keyDynamic, keyRouteField}},
		{"regex without field", map[string]string{prefixTable + "db.t.route-regex": "a.*"}, keyRouteField, []string{"route-regex", keyRouteField}},
		{"field without regex", map[string]string{keyRouteField: "kind"}, "iceberg.table.db.t.route-regex", []string{"iceberg.table.db.t.route-regex", "no records"}},
		{"bad regex", map[string]string{keyRouteField: "kind", prefixTable + "db.t.route-regex": "(("}, "iceberg.table.db.t.route-regex", []string{"iceberg.table.db.t.route-regex", "invalid regular expression"}},
		{"regex for unlisted table", map[string]string{keyRouteField: "kind", prefixTable + "db.t.route-regex": "a", prefixTable + "db.u.route-regex": "b"}, "iceberg.table.db.u.route-regex", []string{"db.u", "not listed"}},
		{"dynamic with regex", map[string]string{keyDynamic: "true", keyRouteField: "kind", prefixTable + "db.t.route-regex": "a"}, "iceberg.table.db.t.route-regex", []string{keyDynamic, "remove it"}},
		{"attempts", map[string]string{keyRetryAttempts: "0"}, keyRetryAttempts, []string{keyRetryAttempts, "at least 1"}},
		{"target size", map[string]string{keyTargetFileSize: "12"}, keyTargetFileSize, []string{keyTargetFileSize, "at least"}},
		{"bool", map[string]string{keyAutoCreate: "yes please"}, keyAutoCreate, []string{keyAutoCreate, "invalid boolean"}},
		{"write-props codec", map[string]string{prefixWriteProps + propCodec: "lzma"}, prefixWriteProps + propCodec, []string{prefixWriteProps + propCodec, `"lzma"`, "snappy"}},
		{"write-props format", map[string]string{prefixWriteProps + propFormat: "orc"}, prefixWriteProps + propFormat, []string{prefixWriteProps + propFormat, "Parquet data files only"}},
		{"write-props size", map[string]string{prefixWriteProps + "write.parquet.row-group-limit": "lots"}, prefixWriteProps + "write.parquet.row-group-limit", []string{"not a positive integer"}},
		{"write-props target size", map[string]string{prefixWriteProps + propTargetFileSize: "1000"}, prefixWriteProps + propTargetFileSize, []string{"below 1 MiB", keyTargetFileSize}},
		{"case-insensitive bool", map[string]string{keyCaseInsensitive: "maybe"}, keyCaseInsensitive, []string{keyCaseInsensitive, "invalid boolean"}},
		{"no data dir", map[string]string{keyDataDir: ""}, keyCatalogURI, []string{keyCatalogURI, keyDataDir}},
		{"sql uri scheme", map[string]string{keyCatalogURI: "mysql://x/y"}, keyCatalogURI, []string{keyCatalogURI, "postgres://"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := map[string]string{}
			for k, v := range base {
				cfg[k] = v
			}
			for k, v := range c.set {
				if v == "" {
					delete(cfg, k)
				} else {
					cfg[k] = v
				}
			}
			_, err := parseSettings(sdk.NewConfig(cfg))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var ce sdk.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %q holds no sdk.ConfigError", err)
			}
			errs := Spec().Validate(cfg)
			if len(errs) != 1 || errs[0].Key != c.key {
				t.Errorf("validation reports %q, want one error under %s", errs, c.key)
			}
		})
	}
}

// The e2e case: a connector config naming only the components is refused
// by validation, under iceberg.tables, rather than at Open.
func TestValidateNeedsTables(t *testing.T) {
	errs := Spec().Validate(map[string]string{"name": "x", "connector.class": "iceberg", "source": "datagen", keyDataDir: "/data"})
	if len(errs) != 1 || errs[0].Key != keyTables || !strings.HasPrefix(errs[0].Message, "set at least one table") {
		t.Fatalf("validation = %q; want one error: iceberg.tables: set at least one table …", errs)
	}
	if errs := Spec().Validate(map[string]string{keyDynamic: "true", keyRouteField: "db", keyDataDir: "/data"}); len(errs) != 0 {
		t.Fatalf("dynamic routing without tables is refused: %q", errs)
	}
}

func TestConfigDefaults(t *testing.T) {
	s, err := parseSettings(sdk.NewConfig(map[string]string{keyTables: "db.t", keyDataDir: "/data"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.catalog.Type != "sql" || s.catalog.Name != "floe" || s.catalog.Warehouse != "file:///data/warehouse" ||
		!s.autoCreate || !s.evolve || !s.sourceMetadata || s.dynamic ||
		s.targetFileSize != 128<<20 || s.retryAttempts != 10 || s.retryBackoff != 100*time.Millisecond || s.retryMaxBackoff != 5*time.Second {
		t.Fatalf("defaults = %+v", s)
	}
	props := s.createProps()
	if props["format-version"] != "2" || props["write.parquet.compression-codec"] != "zstd" {
		t.Fatalf("props = %v", props)
	}

	s, err = parseSettings(sdk.NewConfig(map[string]string{
		keyTables: "db.t", keyCatalogURI: "postgres://floe@db:5432/cat", keyWarehouse: "s3://lake/wh",
		keyJDBCPassword: "s3cr3t", keyCatalogNameAlt: "prod",
		prefixCreateProps + "write.parquet.compression-codec": "snappy",
		prefixCatalog + "s3.region":                           "eu-west-1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.catalog.Name != "prod" || s.createProps()["write.parquet.compression-codec"] != "snappy" || s.catalog.Props["s3.region"] != "eu-west-1" {
		t.Fatalf("settings = %+v", s)
	}
}

// iceberg.tables.write-props.* are kept for the writers (the codec
// lower-cased, as iceberg-go knows it), and write.target-file-size-bytes
// among them sets the roll size unless floe's own key is set.
func TestWriteProps(t *testing.T) {
	base := map[string]string{keyTables: "db.t", keyDataDir: "/data"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	s, err := parseSettings(sdk.NewConfig(base))
	if err != nil || s.writeProps != nil || s.caseInsensitive {
		t.Fatalf("without the keys: writeProps %v, caseInsensitive %v, err %v", s.writeProps, s.caseInsensitive, err)
	}
	s, err = parseSettings(sdk.NewConfig(with(prefixWriteProps+propCodec, "SNAPPY",
		prefixWriteProps+propTargetFileSize, "2097152", prefixWriteProps+"write.metadata.metrics.default", "counts")))
	if err != nil {
		t.Fatal(err)
	}
	if s.writeProps[propCodec] != "snappy" || s.writeProps["write.metadata.metrics.default"] != "counts" || s.targetFileSize != 2<<20 {
		t.Fatalf("writeProps %v, targetFileSize %d; want snappy, counts, 2 MiB", s.writeProps, s.targetFileSize)
	}
	if s.createProps()[propCodec] != "zstd" {
		t.Fatalf("write-props leak into the created table's properties: %v", s.createProps())
	}
	s, err = parseSettings(sdk.NewConfig(with(prefixWriteProps+propTargetFileSize, "2097152", keyTargetFileSize, "4194304")))
	if err != nil || s.targetFileSize != 4<<20 {
		t.Fatalf("with %s set too: targetFileSize %d (err %v), want floe's 4 MiB", keyTargetFileSize, s.targetFileSize, err)
	}
	if errs := Spec().Validate(with(prefixWriteProps+propCodec, "gzip", keyCaseInsensitive, "true")); len(errs) != 0 {
		t.Fatalf("validation refuses the Apache sink's keys: %q", errs)
	}
}

func TestSpecDocumentsEveryKey(t *testing.T) {
	for _, f := range Spec().Fields() {
		if strings.TrimSpace(f.Doc) == "" {
			t.Errorf("%s has no doc", f.Name)
		}
	}
	for _, k := range []string{keyJDBCPassword, prefixCatalog + "credential", prefixCatalog + "s3.secret-access-key", prefixCatalog + "token"} {
		f, ok := Spec().Lookup(k)
		if !ok || !f.Secret {
			t.Errorf("%s is not a secret", k)
		}
	}
	// Keys the Apache Iceberg sink users know are accepted.
	for _, k := range []string{"iceberg.tables", "iceberg.tables.route-field", "iceberg.tables.dynamic-enabled", "iceberg.tables.auto-create-enabled",
		"iceberg.tables.evolve-schema-enabled", "iceberg.tables.default-partition-by", "iceberg.table.a.b.partition-by", "iceberg.table.a.b.route-regex",
		"iceberg.tables.auto-create-props.x", "iceberg.catalog", "iceberg.catalog.type", "iceberg.catalog.uri", "iceberg.catalog.warehouse", "iceberg.catalog.s3.endpoint"} {
		if _, ok := Spec().Lookup(k); !ok {
			t.Errorf("%s is not declared", k)
		}
	}
}

func TestOpenUnreachableCatalog(t *testing.T) {
	cfg := map[string]string{keyTables: "db.t", keyCatalogType: "rest", keyCatalogURI: "http://127.0.0.1:1"}
	_, err := Component().Sink.Open(context.Background(), sdk.SinkOpenRequest{Connector: "c", Config: sdk.NewConfig(cfg), Writers: 1})
	if err == nil || !strings.Contains(err.Error(), "REST catalog at http://127.0.0.1:1") || !strings.Contains(err.Error(), keyCatalogURI) {
		t.Fatalf("err = %v; want it to name %s and the REST catalog's address", err, keyCatalogURI)
	}
}
