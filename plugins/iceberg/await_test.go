package iceberg_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/floehq/floe/lake"
	_ "github.com/floehq/floe/lake/backends"
	"github.com/floehq/floe/plugins/iceberg"
	"github.com/floehq/floe/sdk"
)

// A sink opened while its object store is away (a task restarted during
// an outage) waits for the store and opens once it answers; a store that
// stays away past iceberg.commit.retry.transient-timeout-ms fails the
// Open as transient, so the restart policy tries again.
func TestOpenWaitsForTheObjectStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens: connections are refused
	dataDir := t.TempDir()
	cfg := func(timeout string) sdk.Config {
		return sdk.NewConfig(map[string]string{
			"floe.data.dir":                             dataDir, // the embedded SQLite catalog
			"iceberg.tables":                            "db.events",
			"iceberg.catalog.warehouse":                 "s3://bucket/w",
			"iceberg.catalog.s3.endpoint":               "http://" + addr,
			"iceberg.catalog.s3.path-style-access":      "true",
			"iceberg.catalog.s3.region":                 "us-east-1",
			"iceberg.catalog.s3.access-key-id":          "k",
			"iceberg.catalog.s3.secret-access-key":      "s",
			"iceberg.commit.retry.transient-timeout-ms": timeout,
		})
	}
	ctx := context.Background()
	open := func(c sdk.Config) (time.Duration, error) {
		start := time.Now()
		st, err := iceberg.Component().Sink.Open(ctx, sdk.SinkOpenRequest{Connector: "c", Config: c, Writers: 1})
		if err == nil {
			_ = st.Close(ctx)
		}
		return time.Since(start), err
	}

	took, err := open(cfg("3000"))
	if !errors.Is(err, sdk.ErrTransient) || !errors.Is(err, lake.ErrUnreachable) {
		t.Fatalf("Open with the store away: %v after %s; want a transient unreachable-store error", err, took)
	}

	// The store comes back 2.5 s into the wait: an empty bucket listing.
	go func() {
		time.Sleep(2500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><KeyCount>0</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
		})}
		t.Cleanup(func() { _ = srv.Close() })
		_ = srv.Serve(l)
	}()
	took, err = open(cfg("60000"))
	if err != nil {
		t.Fatalf("Open while the store comes back: %v after %s", err, took)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("Open took %s; want it to wait for the store (back after 2.5 s) and open soon after", took)
	}
}
