package lake

import (
	"net/url"
	"strings"
)

// Services names the catalog and the object store of c for a status or a
// message, never with credentials: "catalog at http://127.0.0.1:8181",
// "object store at http://127.0.0.1:7070". Hosts are their addresses as
// errors show them (host:port), for telling which one failed; empty when
// unknown (the embedded catalog, AWS's own endpoints).
type Services struct {
	Catalog, CatalogHost string
	Store, StoreHost     string
	// LocalStore: the warehouse is a local folder, not a service that can
	// be down.
	LocalStore bool
}

// Services returns the names of c's catalog and object store.
func (c CatalogConfig) Services() Services {
	var s Services
	switch where, host := bareURL(c.URI); {
	case c.Type == CatalogSQL && c.URI == "":
		s.Catalog = "embedded catalog in " + c.DataDir
	case host != "":
		s.Catalog, s.CatalogHost = "catalog at "+where, host
	case c.Type == CatalogSQL && libpqDSN.MatchString(c.URI):
		s.Catalog = "Postgres catalog" // a key=value string: its parts may hold the password
	case c.URI != "":
		s.Catalog = "catalog at " + where
	default:
		s.Catalog = c.Type + " catalog"
	}
	endpoint, host := bareURL(c.Props["s3.endpoint"])
	wh, _ := bareURL(c.Warehouse)
	switch {
	case endpoint != "":
		s.Store, s.StoreHost = "object store at "+endpoint, host
	case strings.HasPrefix(wh, "file:") || !strings.Contains(wh, "://"):
		s.Store, s.LocalStore = "warehouse at "+wh, true
	default:
		s.Store = "object store at " + wh
	}
	return s
}

// bareURL returns raw without user, password, query and fragment, and
// its host:port; raw itself with no host when it is no URL (a path).
func bareURL(raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(strings.TrimPrefix(raw, "jdbc:"))
	if err != nil || u.Host == "" {
		if err != nil {
			return "", ""
		}
		return raw, ""
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath(), u.Host
}
