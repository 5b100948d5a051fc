package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/floehq/floe/sdk"
)

// Catalog config keys. The names are the Apache Iceberg Kafka Connect
// sink's where it has them.
const (
	KeyCatalogType    = "iceberg.catalog.type"
	KeyCatalogURI     = "iceberg.catalog.uri"
	KeyWarehouse      = "iceberg.catalog.warehouse"
	KeyCatalogName    = "iceberg.catalog.name"
	KeyCatalogNameAlt = "iceberg.catalog" // the Apache sink's name for it
	PrefixCatalog     = "iceberg.catalog."
	KeyJDBCUser       = "iceberg.catalog.jdbc.user"
	KeyJDBCPassword   = "iceberg.catalog.jdbc.password"
	// KeyDataDir is injected by the host into every plugin config: the
	// worker's data directory, home of the embedded catalog.
	KeyDataDir = sdk.KeyDataDir
)

// Catalog types.
const (
	CatalogSQL    = "sql"
	CatalogREST   = "rest"
	CatalogGlue   = "glue"
	CatalogHive   = "hive"
	CatalogHadoop = "hadoop"
)

// DefaultCatalogName is the catalog name when the config gives none.
const DefaultCatalogName = "floe"

// sqlitePragmas make the embedded catalog safe for several processes (the
// sink and maintenance plugins) and goroutines writing at once.
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"

// ownProps are iceberg.catalog.* keys interpreted here; the rest go to
// iceberg-go.
var ownProps = map[string]bool{"name": true, "type": true, "uri": true, "warehouse": true, "jdbc.user": true, "jdbc.password": true}

// CatalogFields declares the catalog keys, for a component's spec.
func CatalogFields(group string) []*sdk.Field {
	return []*sdk.Field{
		sdk.String(KeyCatalogType).
			Describe("Catalog implementation: sql (JDBC-compatible tables in SQLite or Postgres), rest, glue, hive or hadoop.").
			Default(CatalogSQL).OneOf(CatalogSQL, CatalogREST, CatalogGlue, CatalogHive, CatalogHadoop).InGroup(group).Rank(sdk.High),
		sdk.String(KeyCatalogURI).
			Describe("Catalog location. sql: a postgres:// URL or a SQLite file path; empty means the embedded SQLite catalog at <floe.data.dir>/catalog.db. rest: the server URL. hive: thrift://host:port.").
			WithExample("postgres://floe@127.0.0.1/catalog").InGroup(group).Rank(sdk.High),
		sdk.String(KeyWarehouse).
			Describe("Root location of new tables (file://, s3://, gs://, abfs://). Empty with the embedded catalog means file://<floe.data.dir>/warehouse.").
			WithExample("s3://lake/warehouse").InGroup(group).Rank(sdk.High),
		// No spec default: a default here would be filled in before
		// iceberg.catalog is looked at, and hide it (ParseCatalogConfig
		// falls back to DefaultCatalogName itself).
		sdk.String(KeyCatalogName).
			Describe("Catalog name, as recorded in the SQL catalog's tables and used by query engines. Default: " + KeyCatalogNameAlt + ", else " + DefaultCatalogName + ".").
			InGroup(group),
		sdk.String(KeyCatalogNameAlt).
			Describe("The Apache Iceberg sink's name for " + KeyCatalogName + "; used when that key is not set.").
			InGroup(group).Rank(sdk.Low),
		sdk.String(KeyJDBCUser).
			Describe("sql catalog on Postgres: user name, when it is not part of the URI.").InGroup(group).Rank(sdk.Low),
		sdk.Password(KeyJDBCPassword).
			Describe("sql catalog on Postgres: password, when it is not part of the URI.").InGroup(group).Rank(sdk.Low),
		sdk.Password(KeyCredential).
			Describe("rest catalog: OAuth2 client credential (client_id:client_secret), exchanged for a token at the catalog's /v1/oauth/tokens (or iceberg.catalog.oauth2-server-uri).").InGroup(group).Rank(sdk.Low),
		sdk.Password(KeyToken).
			Describe("rest catalog: bearer token.").InGroup(group).Rank(sdk.Low),
		sdk.String(KeyS3Endpoint).
			Describe("S3 endpoint of table files, for S3-compatible stores (MinIO, versitygw, Ceph); empty means AWS.").
			WithExample("http://127.0.0.1:9000").InGroup(group).Rank(sdk.Low),
		sdk.String(KeyS3PathStyle).
			Describe("true: path-style S3 requests (endpoint/bucket/key), as most S3-compatible stores want; false: virtual-hosted (bucket.endpoint/key). Default: path-style when an endpoint is set.").
			InGroup(group).Rank(sdk.Low),
		sdk.String(KeyS3AccessKey).
			Describe("S3 access key id for table files (else the AWS default credential chain).").InGroup(group).Rank(sdk.Low),
		sdk.Password(KeyS3SecretKey).
			Describe("S3 secret access key for table files.").InGroup(group).Rank(sdk.Low),
		sdk.Password(PrefixCatalog + "s3.session-token").
			Describe("S3 session token for table files.").InGroup(group).Rank(sdk.Low),
		sdk.Password(PrefixCatalog + "gcs.oauth2.token").
			Describe("Google Cloud Storage OAuth2 token for table files.").InGroup(group).Rank(sdk.Low),
		sdk.Password(PrefixCatalog + "adls.sas-token").
			Describe("Azure Data Lake Storage SAS token for table files.").InGroup(group).Rank(sdk.Low),
		sdk.Prefix(PrefixCatalog).
			Describe("Any other catalog or file IO property, passed to iceberg-go without the prefix (s3.region, s3.endpoint, s3.access-key-id, rest.sigv4-enabled, …).").
			WithExample("iceberg.catalog.s3.region=eu-west-1").InGroup(group),
	}
}

// CatalogConfig says which catalog to open.
type CatalogConfig struct {
	Type         string
	Name         string
	URI          string
	Warehouse    string
	JDBCUser     string
	JDBCPassword string
	DataDir      string
	// Props holds every other iceberg.catalog.* key, prefix removed.
	Props map[string]string
}

// ParseCatalogConfig reads the catalog keys of a connector config, with
// their defaults. Its errors name the key and say what is expected.
func ParseCatalogConfig(cfg map[string]string) (CatalogConfig, error) {
	get := func(k string) string { return strings.TrimSpace(cfg[k]) }
	c := CatalogConfig{
		Type:         strings.ToLower(get(KeyCatalogType)),
		Name:         get(KeyCatalogName),
		URI:          get(KeyCatalogURI),
		Warehouse:    get(KeyWarehouse),
		JDBCUser:     cfg[KeyJDBCUser],
		JDBCPassword: cfg[KeyJDBCPassword],
		DataDir:      get(KeyDataDir),
		Props:        map[string]string{},
	}
	for k, v := range cfg {
		if rest, ok := strings.CutPrefix(k, PrefixCatalog); ok && rest != "" && !ownProps[rest] {
			c.Props[rest] = v
		}
	}
	if c.Type == "" {
		c.Type = CatalogSQL
	}
	if c.Name == "" {
		c.Name = get(KeyCatalogNameAlt)
	}
	if c.Name == "" {
		c.Name = DefaultCatalogName
	}
	switch c.Type {
	case CatalogSQL:
		switch {
		case c.URI == "" && c.DataDir == "":
			return CatalogConfig{}, fmt.Errorf("%s is empty and the host set no %s: give the catalog a URI (postgres://… or a SQLite file)", KeyCatalogURI, KeyDataDir)
		case c.Warehouse == "" && c.DataDir == "":
			return CatalogConfig{}, fmt.Errorf("%s: required with catalog type sql (where new tables go, e.g. s3://lake/warehouse)", KeyWarehouse)
		case c.Warehouse == "":
			c.Warehouse = "file://" + filepath.ToSlash(filepath.Join(c.DataDir, "warehouse"))
		}
		if _, _, _, err := c.sqlTarget(); err != nil {
			return CatalogConfig{}, err
		}
	case CatalogREST:
		if c.URI == "" {
			return CatalogConfig{}, fmt.Errorf("%s: required with catalog type rest (the server's URL, e.g. http://127.0.0.1:8181)", KeyCatalogURI)
		}
		if u, err := url.Parse(c.URI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return CatalogConfig{}, fmt.Errorf("%s: the rest catalog takes an http:// or https:// URL, got %s", KeyCatalogURI, redactURL(c.URI))
		}
	case CatalogGlue, CatalogHive, CatalogHadoop:
	default:
		return CatalogConfig{}, fmt.Errorf("%s: unknown catalog type %q (sql, rest, glue, hive or hadoop)", KeyCatalogType, c.Type)
	}
	if err := validPathStyle(c.Props); err != nil {
		return CatalogConfig{}, err
	}
	return c, nil
}

// OpenCatalog connects to the catalog. The returned function releases it.
//
// The sql type opens its database itself (SQLite through modernc, Postgres
// through pgx); the other types go through catalog.Load, which finds them
// only when package lake/backends is linked into the binary. A rest
// catalog is asked for its config while opening, so an unreachable URI,
// refused credentials or a warehouse the server does not serve fail here,
// as an sdk.KeyError naming the key to fix. The object store is not
// touched: [CheckWarehouse] does that.
func OpenCatalog(ctx context.Context, c CatalogConfig) (catalog.Catalog, func() error, error) {
	props := icebergapi.Properties{}
	for k, v := range ioProps(c.Props) {
		props[k] = v
	}
	props["type"] = c.Type
	if c.Warehouse != "" {
		props["warehouse"] = c.Warehouse
	}
	if c.URI != "" {
		props["uri"] = c.URI
	}

	if c.Type != CatalogSQL {
		cat, err := catalog.Load(ctx, c.Name, props)
		if errors.Is(err, catalog.ErrCatalogNotFound) {
			return nil, nil, fmt.Errorf("%s=%s: this binary does not include that catalog (link package lake/backends)", KeyCatalogType, c.Type)
		}
		if err != nil && c.Type == CatalogREST {
			return nil, nil, restOpenError(c, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("open %s catalog: %w", c.Type, err)
		}
		closeFn := func() error { return nil }
		if cl, ok := cat.(interface{ Close() error }); ok {
			closeFn = cl.Close
		}
		return cat, closeFn, nil
	}

	db, dialect, err := c.OpenDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	delete(props, "uri") // the handle is open; do not leak the DSN into table IO properties
	cat, err := sqlcat.NewCatalog(c.Name, db, sqlcat.SupportedDialect(dialect), props)
	for try := 0; err != nil && lostSchemaRace(err) && try < 3; try++ {
		// Another process created the catalog's tables at the same
		// moment (Postgres answers the loser of two CREATE TABLE IF NOT
		// EXISTS with a duplicate key): they exist now.
		cat, err = sqlcat.NewCatalog(c.Name, db, sqlcat.SupportedDialect(dialect), props)
	}
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("open sql catalog: %w", err)
	}
	return cat, func() error { return errors.Join(cat.Close(), db.Close()) }, nil
}

// lostSchemaRace reports the error of a sql catalog whose creation of
// its own tables raced another process's.
func lostSchemaRace(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "duplicate key") || strings.Contains(msg, "already exists")
}

// ErrNotSQL is returned by OpenDB for catalogs that are not SQL catalogs.
var ErrNotSQL = errors.New("not a sql catalog")

// OpenDB opens the database of a sql catalog and returns it with its
// dialect ("sqlite" or "postgres"). Besides the catalog itself, tools that
// must coordinate through the catalog's database (maintenance leases) use
// it; the caller closes it.
func (c CatalogConfig) OpenDB(ctx context.Context) (*sql.DB, string, error) {
	if c.Type != CatalogSQL {
		return nil, "", fmt.Errorf("%s=%s: %w", KeyCatalogType, c.Type, ErrNotSQL)
	}
	driver, dialect, dsn, err := c.sqlTarget()
	if err != nil {
		return nil, "", err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, "", fmt.Errorf("%s: open %s database: %w", KeyCatalogURI, dialect, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, "", fmt.Errorf("%s: cannot reach the %s catalog database: %w", KeyCatalogURI, dialect, err)
	}
	return db, string(dialect), nil
}

// sqlTarget picks the database/sql driver, dialect and DSN of the sql
// catalog: Postgres for postgres:// URIs, SQLite for everything else (a
// path, file:…, sqlite:…), the embedded file when the URI is empty.
// libpqDSN matches a libpq key=value connection string ("host=db
// dbname=cat password=…"): a key libpq knows, then "=".
var libpqDSN = regexp.MustCompile(`(?i)(^|\s)(host|hostaddr|port|dbname|user|password|passfile|sslmode|connect_timeout|application_name|options)\s*=`)

func (c CatalogConfig) sqlTarget() (driver string, dialect sqlcat.SupportedDialect, dsn string, err error) {
	uri := c.URI
	// The Apache sink's JdbcCatalog takes JDBC URLs: jdbc:postgresql://…
	// is a postgres URL, jdbc:sqlite:… a SQLite file.
	if rest, ok := strings.CutPrefix(uri, "jdbc:"); ok {
		switch {
		case strings.HasPrefix(rest, "postgresql://"), strings.HasPrefix(rest, "sqlite:"):
			uri = rest
		default:
			return "", "", "", fmt.Errorf("%s: the sql catalog takes a postgres:// (or jdbc:postgresql://) URL or a SQLite file path, got a jdbc:%s URL",
				KeyCatalogURI, strings.SplitN(rest, ":", 2)[0])
		}
	}
	switch {
	case uri == "":
		if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
			return "", "", "", fmt.Errorf("%s: %w", KeyDataDir, err)
		}
		return sqliteshim.ShimName, sqlcat.SQLite, "file:" + filepath.Join(c.DataDir, "catalog.db") + "?" + sqlitePragmas, nil
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		u, err := url.Parse(uri)
		if err != nil {
			// The parse error would echo the URL, password included.
			return "", "", "", fmt.Errorf("%s: not a valid postgres URL (postgres://user@host:port/database)", KeyCatalogURI)
		}
		if c.JDBCUser != "" || c.JDBCPassword != "" {
			user := c.JDBCUser
			if user == "" && u.User != nil {
				user = u.User.Username()
			}
			if c.JDBCPassword != "" {
				u.User = url.UserPassword(user, c.JDBCPassword)
			} else {
				u.User = url.User(user)
			}
		}
		return "pgx", sqlcat.Postgres, u.String(), nil
	case strings.Contains(uri, "://") && !strings.HasPrefix(uri, "file:") && !strings.HasPrefix(uri, "sqlite:"):
		return "", "", "", fmt.Errorf("%s: the sql catalog takes a postgres:// URL or a SQLite file path, got a %s URL",
			KeyCatalogURI, strings.SplitN(uri, "://", 2)[0])
	case libpqDSN.MatchString(uri):
		// Taken as a file name it would become a new SQLite file named
		// after the password; the message must not echo the value.
		return "", "", "", fmt.Errorf("%s looks like a libpq connection string (key=value pairs): the sql catalog takes a postgres:// URL, for example postgres://user@host:5432/database (the password in %s), or a SQLite file path",
			KeyCatalogURI, KeyJDBCPassword)
	default:
		path := strings.TrimPrefix(uri, "sqlite://")
		path = strings.TrimPrefix(path, "sqlite:")
		if !strings.HasPrefix(path, "file:") {
			path = "file:" + path
		}
		if !strings.Contains(path, "_pragma=") {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			path += sep + sqlitePragmas
		}
		return sqliteshim.ShimName, sqlcat.SQLite, path, nil
	}
}
