package backends_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/utils"

	"github.com/floehq/floe/lake"
	_ "github.com/floehq/floe/lake/backends"
)

// fakeS3 answers every request 200 and counts the connections opened.
func fakeS3(t *testing.T) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var conns, puts atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			puts.Add(1)
		}
		w.Header().Set("ETag", `"0"`)
		w.WriteHeader(http.StatusOK)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns, &puts
}

func s3Catalog(endpoint string, extra map[string]string) lake.CatalogConfig {
	props := map[string]string{
		"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.path-style-access": "true",
		"s3.access-key-id": "floe", "s3.secret-access-key": "secret",
	}
	for k, v := range extra {
		props[k] = v
	}
	return lake.CatalogConfig{Type: lake.CatalogREST, Props: props}
}

// writeTwice opens the table IO twice, as two commits do, and writes a
// file through each.
func writeTwice(t *testing.T, ctx context.Context, c lake.CatalogConfig) {
	t.Helper()
	props := map[string]string{}
	for k, v := range c.Props {
		props[k] = v
	}
	delete(props, "s3.path-style-access")
	props[iceio.S3ForceVirtualAddressing] = "false"
	for i := range 2 {
		fsys, err := iceio.LoadFS(ctx, props, "s3://lake/warehouse/t")
		if err != nil {
			t.Fatal(err)
		}
		if err := fsys.(iceio.WriteFileIO).WriteFile("s3://lake/warehouse/t/metadata/f"+string(rune('0'+i)), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
}

// With the shared configuration in the context, the S3 clients iceberg-go
// builds per call share one connection pool: two commits' writes reuse
// one connection. Without it each opens its own.
func TestSharedS3ConfigReusesConnections(t *testing.T) {
	srv, conns, puts := fakeS3(t)
	c := s3Catalog(srv.URL, nil)
	cfg, err := lake.SharedS3Config(context.Background(), c)
	if err != nil || cfg == nil {
		t.Fatalf("SharedS3Config = %v, %v", cfg, err)
	}
	writeTwice(t, utils.WithAwsConfig(context.Background(), cfg), c)
	if puts.Load() != 2 || conns.Load() != 1 {
		t.Fatalf("shared: %d PUTs over %d connections, want 2 over 1", puts.Load(), conns.Load())
	}

	srv2, conns2, puts2 := fakeS3(t)
	writeTwice(t, context.Background(), s3Catalog(srv2.URL, nil))
	if puts2.Load() != 2 || conns2.Load() != 2 {
		t.Fatalf("per call: %d PUTs over %d connections, want 2 over 2 (iceberg-go changed: the shared config may be moot)", puts2.Load(), conns2.Load())
	}
}

// Properties the shared configuration does not reproduce leave each call
// to iceberg-go.
func TestSharedS3ConfigLeavesUnknownProps(t *testing.T) {
	for _, k := range []string{"s3.proxy-uri", "s3.connect-timeout", "s3.remote-signing-enabled"} {
		cfg, err := lake.SharedS3Config(context.Background(), s3Catalog("http://127.0.0.1:1", map[string]string{k: "1"}))
		if err != nil || cfg != nil {
			t.Fatalf("%s: SharedS3Config = %v, %v; want nil, nil", k, cfg, err)
		}
	}
}
