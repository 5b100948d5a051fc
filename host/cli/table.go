package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/host/standalone"
	"github.com/floehq/floe/lake"
)

// Connector config keys `floe table describe` fills in to reach a catalog;
// they mean what the iceberg sink's keys of the same names mean.
const (
	keyDataDir          = lake.KeyDataDir
	keyCatalogType      = "iceberg.catalog.type"
	keyCatalogURI       = "iceberg.catalog.uri"
	keyCatalogWarehouse = "iceberg.catalog.warehouse"
	keyCatalogName      = "iceberg.catalog.name"
)

// catalogOpener opens the catalog a connector config names (its
// iceberg.catalog.* keys and floe.data.dir), as the iceberg sink does. The
// returned function releases it.
type catalogOpener func(ctx context.Context, config map[string]string) (catalog.Catalog, func() error, error)

type tableOpts struct {
	worker, connector     string
	catalogURI, warehouse string
	catalogType, name     string
	dataDir               string
	json                  bool
	smallFileBytes        int64
	log                   *logFlags
}

func tableFlags(a *App) (*flag.FlagSet, *tableOpts) {
	fs := newFlagSet("table")
	o := &tableOpts{}
	fs.StringVar(&o.worker, "worker", "", "worker config whose data.dir holds the embedded catalog (data.dir/catalog.db, warehouse data.dir/warehouse)")
	fs.StringVar(&o.connector, "connector", "", "connector file whose iceberg.catalog.* keys name the catalog")
	fs.StringVar(&o.catalogURI, "catalog-uri", "", "catalog URI: postgres://…, a SQLite file, or a REST catalog URL (with --catalog-type rest)")
	fs.StringVar(&o.warehouse, "warehouse", "", "warehouse location of the catalog (file://…, s3://…)")
	fs.StringVar(&o.catalogType, "catalog-type", "", "catalog type: sql, rest, glue, hive or hadoop (default sql)")
	fs.StringVar(&o.name, "catalog-name", "", "catalog name (default floe, as the sink's)")
	fs.StringVar(&o.dataDir, "data-dir", "./data", "data dir of the embedded catalog when no --worker is given")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
	fs.Int64Var(&o.smallFileBytes, "small-file-bytes", 0, "data files under this size count as small (default 75% of the table's write.target-file-size-bytes, or of 128 MiB)")
	o.log = addLogFlags(fs, a)
	return fs, o
}

func tableCommand() *command {
	return &command{
		name:    "table",
		summary: "describe an Iceberg table: schema, partitions, snapshots, files",
		usage:   "table describe <namespace.table> [--worker worker.json | --connector connector.json | --catalog-uri URI --warehouse LOCATION] [--json]",
		help: `Loads a table from its catalog and prints its schema (field ids, names,
types, required, docs, nested fields), partition spec, properties,
snapshots (time, operation, summary with floe.checkpoint), the current
snapshot's data files (count, total size, records, small files) and the
current metadata location, which DuckDB reads directly:

  duckdb -c "INSTALL iceberg; LOAD iceberg; SELECT * FROM iceberg_scan('<metadata>')"

The catalog is the embedded SQLite catalog of a data dir by default
(<data.dir>/catalog.db, warehouse <data.dir>/warehouse, catalog name floe,
as the iceberg sink creates it); --worker takes the data dir from a worker
config, --connector takes every iceberg.catalog.* key of a connector file,
and --catalog-uri/--warehouse name another catalog.`,
		flagSet: func(a *App) *flag.FlagSet { fs, _ := tableFlags(a); return fs },
		run:     (*App).runTable,
	}
}

func (a *App) runTable(ctx context.Context, args []string) error {
	fs, o := tableFlags(a)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "describe" {
		if len(pos) == 0 {
			return usagef("missing the subcommand: floe table describe <namespace.table>")
		}
		return usagef("unknown subcommand %q: the table command has describe", pos[0])
	}
	if err := argCount(pos[1:], 1, 1, "the table name (namespace.table, for example demo.orders)"); err != nil {
		return err
	}
	ident, err := tableIdent(pos[1])
	if err != nil {
		return usagef("%v", err)
	}
	if _, err := a.loggers(o.log); err != nil {
		return err
	}
	config, err := catalogConfig(o)
	if err != nil {
		return err
	}
	open := a.openCatalog
	if open == nil {
		open = sharedCatalogOpener
	}
	cat, closeCat, err := open(ctx, config)
	if err != nil {
		return fmt.Errorf("open the catalog: %w", err)
	}
	defer func() { _ = closeCat() }()

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return fmt.Errorf("table %s does not exist in the catalog%s", pos[1], tableHint(config))
		}
		return fmt.Errorf("load table %s: %w", pos[1], err)
	}
	d, err := describeTable(ctx, tbl, o.smallFileBytes)
	if err != nil {
		return err
	}
	if d.Maintenance, err = maintenanceHistory(config[keyDataDir], d.Table); err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(d)
	}
	return printTable(a.Stdout, d)
}

// tableIdent splits namespace.table; nested namespaces keep their dots
// (a.b.c is table c in namespace a.b).
func tableIdent(name string) (table.Identifier, error) {
	parts := strings.Split(strings.TrimSpace(name), ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("table %q has no namespace: write namespace.table, for example demo.orders", name)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("table %q has an empty part: write namespace.table", name)
		}
	}
	return table.Identifier(parts), nil
}

// catalogConfig builds the connector-style config naming the catalog.
func catalogConfig(o *tableOpts) (map[string]string, error) {
	sources := 0
	for _, set := range []bool{o.worker != "", o.connector != "", o.catalogURI != "" || o.warehouse != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		return nil, usagef("give one of --worker, --connector or --catalog-uri/--warehouse")
	}
	config := map[string]string{keyDataDir: o.dataDir}
	switch {
	case o.worker != "":
		wc, err := loadWorkerConfig(o.worker)
		if err != nil {
			return nil, err
		}
		config[keyDataDir] = wc.DataDir
	case o.connector != "":
		c, err := standalone.LoadConnector(o.connector)
		if err != nil {
			return nil, err
		}
		for k, v := range c.Config {
			if strings.HasPrefix(k, "iceberg.catalog") {
				config[k] = v
			}
		}
	default:
		if o.catalogURI != "" {
			config[keyCatalogURI] = o.catalogURI
		}
		if o.warehouse != "" {
			config[keyCatalogWarehouse] = o.warehouse
		}
	}
	if o.catalogType != "" {
		config[keyCatalogType] = o.catalogType
	}
	if o.name != "" {
		config[keyCatalogName] = o.name
	}
	return config, nil
}

// tableHint says where floe looked, for a table that is not there.
func tableHint(config map[string]string) string {
	if uri := config[keyCatalogURI]; uri != "" {
		return fmt.Sprintf(" %s: check the name, or create it by running a connector with iceberg.tables listing it", maskURI(uri))
	}
	return fmt.Sprintf(" of data dir %s: check the name, point --worker or --data-dir at the worker's data dir, or create it by running a connector (make demo)", config[keyDataDir])
}

// maskURI hides a password in a URI for messages.
func maskURI(uri string) string {
	if i := strings.Index(uri, "://"); i >= 0 {
		if at := strings.Index(uri[i+3:], "@"); at >= 0 {
			userinfo := uri[i+3 : i+3+at]
			if c := strings.Index(userinfo, ":"); c >= 0 {
				return uri[:i+3] + userinfo[:c] + ":[hidden]" + uri[i+3+at:]
			}
		}
	}
	return uri
}

// sharedCatalogOpener opens the catalog with lake, the same code the
// iceberg plugins use, so a connector's catalog keys mean the same here.
func sharedCatalogOpener(ctx context.Context, config map[string]string) (catalog.Catalog, func() error, error) {
	c, err := lake.ParseCatalogConfig(config)
	if err != nil {
		return nil, nil, err
	}
	return lake.OpenCatalog(ctx, c)
}
