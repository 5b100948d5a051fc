package lake

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floehq/floe/sdk"
)

func TestPathStyleBecomesVirtualAddressing(t *testing.T) {
	for v, want := range map[string]string{"true": "false", "false": "true", "TRUE": "false"} {
		got := ioProps(map[string]string{"s3.path-style-access": v, "s3.endpoint": "http://x"})
		if got["s3.force-virtual-addressing"] != want || got["s3.path-style-access"] != "" || got["s3.endpoint"] != "http://x" {
			t.Errorf("path-style %s: props %v", v, got)
		}
	}
	got := ioProps(map[string]string{"s3.path-style-access": "true", "s3.force-virtual-addressing": "true"})
	if got["s3.force-virtual-addressing"] != "true" {
		t.Errorf("an explicit s3.force-virtual-addressing was overridden: %v", got)
	}
	if _, err := ParseCatalogConfig(map[string]string{KeyDataDir: "/d", KeyS3PathStyle: "yes"}); err == nil || !strings.Contains(err.Error(), KeyS3PathStyle) {
		t.Errorf("path-style yes: err = %v", err)
	}
}

func TestRESTCatalogNeedsAnHTTPURI(t *testing.T) {
	for _, uri := range []string{"", "thrift://h:9083", "127.0.0.1:8181", "http://"} {
		_, err := ParseCatalogConfig(map[string]string{KeyCatalogType: "rest", KeyCatalogURI: uri})
		if err == nil || !strings.Contains(err.Error(), KeyCatalogURI) {
			t.Errorf("uri %q: err = %v, want one naming %s", uri, err, KeyCatalogURI)
		}
	}
	if _, err := ParseCatalogConfig(map[string]string{KeyCatalogType: "rest", KeyCatalogURI: "https://cat.example/api"}); err != nil {
		t.Errorf("https URI: %v", err)
	}
}

// The classifications below name the key a user must change; the real
// servers' answers behind them are checked end to end (e2e
// TestLakeBadInput).
func TestRESTOpenErrorNamesTheKey(t *testing.T) {
	c := CatalogConfig{Type: CatalogREST, URI: "http://u:pw@127.0.0.1:1", Warehouse: "s3://b/w", Props: map[string]string{"credential": "id:secret"}}
	for msg, key := range map[string]string{
		"REST error: unauthorized: missing or invalid bearer token":                               KeyCredential,
		"REST error: oauth error: invalid_client":                                                 KeyCredential,
		"REST error: bad request: warehouse s3://x is not served":                                 KeyWarehouse,
		"Get \"http://127.0.0.1:1/v1/config\": dial tcp 127.0.0.1:1: connect: connection refused": KeyCatalogURI,
	} {
		err := restOpenError(c, errors.New(msg))
		var ce sdk.ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%q: got %v, want an error on %s", msg, err, key)
		}
		if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "id:secret") {
			t.Errorf("%q: error %q shows a secret", msg, err)
		}
	}
	tokenOnly := CatalogConfig{Type: CatalogREST, URI: "http://h", Props: map[string]string{"token": "t"}}
	var ce sdk.ConfigError
	if err := restOpenError(tokenOnly, errors.New("REST error: unauthorized")); !errors.As(err, &ce) || ce.Key != KeyToken {
		t.Errorf("token only: %v, want an error on %s", err, KeyToken)
	}
}

func TestCheckWarehouseSkipsLocalAndUnlinkedStores(t *testing.T) {
	ctx := context.Background()
	if err := CheckWarehouse(ctx, CatalogConfig{Warehouse: "file:///tmp/w"}); err != nil {
		t.Errorf("file warehouse: %v", err)
	}
	// Without package lake/backends no object store is registered: the
	// check passes and the writes report what they find.
	if err := CheckWarehouse(ctx, CatalogConfig{Warehouse: "s3://bucket/w", Props: map[string]string{}}); err != nil {
		t.Errorf("s3 warehouse without backends: %v", err)
	}
}

// A store that cannot be reached is told apart from one that answered,
// so a task can wait for it; both still name the key to check.
func TestStoreErrorMarksUnreachable(t *testing.T) {
	c := CatalogConfig{Warehouse: "s3://b/w", Props: map[string]string{"s3.endpoint": "http://127.0.0.1:1"}}
	for msg, unreachable := range map[string]bool{
		"dial tcp 127.0.0.1:1: connect: connection refused": true,
		"read: connection reset by peer":                    true,
		"NoSuchBucket: the bucket does not exist":           false,
		"AccessDenied: Access Denied":                       false,
	} {
		err := storeError(c, "b", errors.New(msg))
		if errors.Is(err, ErrUnreachable) != unreachable {
			t.Errorf("%q: errors.Is(ErrUnreachable) = %v, want %v", msg, !unreachable, unreachable)
		}
		var ce sdk.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: %v holds no sdk.ConfigError", msg, err)
		}
	}
}

// Each store's words for a missing bucket become the one message that
// says to create it: S3's, Google Cloud Storage's, Azure's.
func TestStoreErrorNamesAMissingBucket(t *testing.T) {
	c := CatalogConfig{Warehouse: "s3://b/w"}
	for _, msg := range []string{
		"api error NoSuchBucket: The specified bucket does not exist",
		"storage: bucket doesn't exist",
		"RESPONSE 404: ContainerNotFound",
	} {
		err := storeError(c, "b", errors.New(msg))
		if !strings.Contains(err.Error(), `bucket "b" does not exist`) {
			t.Errorf("%q: %v", msg, err)
		}
	}
}
