package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/uptrace/bun/driver/sqliteshim"
)

// sqlitePragmas make the embedded catalog safe for several processes (the
// sink and maintenance plugins) and goroutines writing at once.
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"

// ownProps are iceberg.catalog.* keys the sink interprets itself; the rest
// go to iceberg-go.
var ownProps = map[string]bool{"name": true, "jdbc.user": true, "jdbc.password": true}

// openCatalog connects to the configured catalog. The returned close
// function releases it.
//
// The sql type opens its database itself (SQLite through modernc, Postgres
// through pgx); the other types go through catalog.Load, which finds them
// by name only when their packages are linked into the binary (see package
// backends, which the plugin binary imports).
func openCatalog(ctx context.Context, s settings) (catalog.Catalog, func() error, error) {
	props := icebergapi.Properties{}
	for k, v := range s.catalogProps {
		if !ownProps[k] {
			props[k] = v
		}
	}
	props["type"] = s.catalogType
	if s.warehouse != "" {
		props["warehouse"] = s.warehouse
	}
	if s.catalogURI != "" {
		props["uri"] = s.catalogURI
	}

	if s.catalogType != catalogSQL {
		cat, err := catalog.Load(ctx, s.catalogName, props)
		if errors.Is(err, catalog.ErrCatalogNotFound) {
			return nil, nil, fmt.Errorf("iceberg sink: %s=%s: this binary does not include that catalog (build it with package plugins/iceberg/backends)", keyCatalogType, s.catalogType)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("iceberg sink: open %s catalog: %w", s.catalogType, err)
		}
		closeFn := func() error { return nil }
		if c, ok := cat.(interface{ Close() error }); ok {
			closeFn = c.Close
		}
		return cat, closeFn, nil
	}

	driver, dialect, dsn, err := sqlTarget(s)
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg sink: %s: open %s database: %w", keyCatalogURI, dialect, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("iceberg sink: %s: cannot reach the %s catalog database: %w", keyCatalogURI, dialect, err)
	}
	delete(props, "uri") // the handle is open; do not leak the DSN into table IO properties
	cat, err := sqlcat.NewCatalog(s.catalogName, db, dialect, props)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("iceberg sink: open sql catalog: %w", err)
	}
	return cat, func() error { return errors.Join(cat.Close(), db.Close()) }, nil
}

// sqlTarget picks the database/sql driver, dialect and DSN of the sql
// catalog: Postgres for postgres:// URIs, SQLite for everything else (a
// path, file:…, sqlite:…), the embedded file when the URI is empty.
func sqlTarget(s settings) (driver string, dialect sqlcat.SupportedDialect, dsn string, err error) {
	uri := s.catalogURI
	switch {
	case uri == "":
		if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
			return "", "", "", fmt.Errorf("iceberg sink: %s: %w", keyDataDir, err)
		}
		return sqliteshim.ShimName, sqlcat.SQLite, "file:" + filepath.Join(s.dataDir, "catalog.db") + "?" + sqlitePragmas, nil
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		u, err := url.Parse(uri)
		if err != nil {
			// The parse error would echo the URL, password included.
			return "", "", "", fmt.Errorf("iceberg sink: %s: not a valid postgres URL (postgres://user@host:port/database)", keyCatalogURI)
		}
		if s.jdbcUser != "" || s.jdbcPassword != "" {
			user := s.jdbcUser
			if user == "" && u.User != nil {
				user = u.User.Username()
			}
			if s.jdbcPassword != "" {
				u.User = url.UserPassword(user, s.jdbcPassword)
			} else {
				u.User = url.User(user)
			}
		}
		return "pgx", sqlcat.Postgres, u.String(), nil
	case strings.Contains(uri, "://") && !strings.HasPrefix(uri, "file:") && !strings.HasPrefix(uri, "sqlite:"):
		return "", "", "", fmt.Errorf("iceberg sink: %s: the sql catalog takes a postgres:// URL or a SQLite file path, got a %s URL",
			keyCatalogURI, strings.SplitN(uri, "://", 2)[0])
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
