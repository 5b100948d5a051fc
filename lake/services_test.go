package lake

import (
	"strings"
	"testing"
)

// The names never carry credentials.
func TestServicesHideCredentials(t *testing.T) {
	for _, tt := range []struct {
		c            CatalogConfig
		catalog, sto string
	}{
		{CatalogConfig{Type: CatalogSQL, URI: "postgres://floe:secret@db:5432/cat?password=secret", Warehouse: "s3://b/w"},
			"catalog at postgres://db:5432/cat", "object store at s3://b/w"},
		{CatalogConfig{Type: CatalogSQL, URI: "host=db password=secret dbname=cat", Warehouse: "file:///tmp/w"},
			"Postgres catalog", "warehouse at file:///tmp/w"},
		{CatalogConfig{Type: CatalogSQL, DataDir: "/data", Warehouse: "file:///data/warehouse"},
			"embedded catalog in /data", "warehouse at file:///data/warehouse"},
		{CatalogConfig{Type: CatalogREST, URI: "https://u:p@cat.example.com/api?token=secret", Warehouse: "lake",
			Props: map[string]string{"s3.endpoint": "https://k:s@s3.example.com"}},
			"catalog at https://cat.example.com/api", "object store at https://s3.example.com"},
	} {
		s := tt.c.Services()
		if s.Catalog != tt.catalog || s.Store != tt.sto || strings.Contains(s.Catalog+s.Store, "secret") {
			t.Errorf("%+v: services %q, %q; want %q, %q", tt.c, s.Catalog, s.Store, tt.catalog, tt.sto)
		}
	}
}
