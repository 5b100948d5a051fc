package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"gocloud.dev/blob"

	"github.com/floehq/floe/sdk"
)

// Object-store keys the checks name in their errors (the Apache Iceberg
// sink's names, under iceberg.catalog.).
const (
	KeyCredential     = PrefixCatalog + "credential"
	KeyToken          = PrefixCatalog + "token"
	KeyS3Endpoint     = PrefixCatalog + "s3.endpoint"
	KeyS3AccessKey    = PrefixCatalog + "s3.access-key-id"
	KeyS3SecretKey    = PrefixCatalog + "s3.secret-access-key"
	KeyS3PathStyle    = PrefixCatalog + "s3.path-style-access"
	propS3PathStyle   = "s3.path-style-access"
	storeCheckTimeout = 15 * time.Second
)

// ErrUnreachable is matched (errors.Is) by a CheckWarehouse error that
// could not reach the object store at all, as opposed to one the store
// answered: a caller that knows the store worked before may wait for it.
var ErrUnreachable = errors.New("object store unreachable")

// unreachableError marks such an error; its message is the KeyError's.
type unreachableError struct{ error }

func (unreachableError) Is(target error) bool { return target == ErrUnreachable }
func (e unreachableError) Unwrap() error      { return e.error }

// objectStoreSchemes are warehouse schemes CheckWarehouse looks at; a
// file:// warehouse needs no check (the writes report a bad path).
var objectStoreSchemes = map[string]bool{"s3": true, "s3a": true, "s3n": true, "gs": true, "abfs": true, "abfss": true, "wasb": true, "wasbs": true}

// CheckWarehouse checks that the object store of an s3:// (gs://,
// abfs://) warehouse answers with the configured endpoint and credentials
// and that its bucket exists, by listing one key of the bucket (no object
// is written). Callers run it before
// they create anything, so a wrong key fails the connector with nothing
// half-created. Its errors are sdk.KeyErrors naming the key to fix:
// iceberg.catalog.warehouse for a missing bucket,
// iceberg.catalog.s3.endpoint for a store it cannot reach, the access key
// for refused credentials. A warehouse that is not an object-store URL,
// or a binary without package lake/backends (no object stores), passes.
func CheckWarehouse(ctx context.Context, c CatalogConfig) error {
	u, err := url.Parse(c.Warehouse)
	if err != nil || !objectStoreSchemes[strings.ToLower(u.Scheme)] || u.Host == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	fsys, err := iceio.LoadFS(ctx, ioProps(c.Props), c.Warehouse)
	if err != nil {
		if strings.Contains(err.Error(), "not registered") || strings.Contains(err.Error(), "unsupported") {
			return nil // this binary has no object stores linked
		}
		return sdk.KeyError(KeyWarehouse, "%s: cannot open its object store: %v", c.Warehouse, err)
	}
	// The blob stores' file IO embeds gocloud's bucket: list one key and
	// judge the store's own error. Not its IsAccessible: gocloud's S3
	// driver takes any failed call whose message holds "301" (its sign of
	// a redirect) for a missing bucket, so a store down at a port such as
	// 49301 read as a bucket to create. A Stat cannot tell a missing
	// bucket from an empty prefix (both are "not exist").
	if b, ok := fsys.(interface {
		ListPage(context.Context, []byte, int, *blob.ListOptions) ([]*blob.ListObject, []byte, error)
	}); ok {
		if _, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, nil); err != nil {
			return storeError(c, u.Host, err)
		}
		return nil
	}
	st, ok := fsys.(iceio.StatIO)
	if !ok {
		return nil
	}
	_, err = st.Stat(strings.TrimSuffix(c.Warehouse, "/") + "/")
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return storeError(c, u.Host, err)
}

// storeError names the key behind an object store's refusal.
func storeError(c CatalogConfig, bucket string, err error) error {
	msg := err.Error()
	endpoint := c.Props["s3.endpoint"]
	where := "the object store"
	if endpoint != "" {
		where += " at " + endpoint
	}
	switch {
	case containsAny(msg, "NoSuchBucket", "bucket does not exist", "bucket doesn't exist", "BucketNotFound", "ContainerNotFound"):
		return sdk.KeyError(KeyWarehouse, "%s: bucket %q does not exist in %s; create it, or point the warehouse at an existing bucket", c.Warehouse, bucket, where)
	case containsAny(msg, "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden", "PermissionDenied", "StatusCode: 403", "status code: 403", "InvalidToken", "ExpiredToken"):
		return sdk.KeyError(KeyS3AccessKey, "%s refused the credentials for %s (%s): check %s and %s", where, c.Warehouse, firstLine(msg), KeyS3AccessKey, KeyS3SecretKey)
	case containsAny(msg, "connection refused", "no such host", "i/o timeout", "deadline exceeded", "connection reset", "EOF", "dial tcp"):
		key := KeyS3Endpoint
		if endpoint == "" {
			key = KeyWarehouse
		}
		return unreachableError{sdk.KeyError(key, "cannot reach %s for %s: %s; check the endpoint and that the store is running", where, c.Warehouse, firstLine(msg))}
	}
	return sdk.KeyError(KeyWarehouse, "%s: %s answered: %s", c.Warehouse, where, firstLine(msg))
}

// restOpenError names the key behind a REST catalog's refusal to open:
// the catalog fetches its config (GET /v1/config, after an OAuth2 token
// request when a credential is set) while opening, so a wrong URI, a
// refused credential and a warehouse the server does not serve all show
// here, before anything is created.
func restOpenError(c CatalogConfig, err error) error {
	msg := err.Error()
	uri := redactURL(c.URI)
	switch {
	// First: an unreachable server fails the token request too, and
	// that error reads "oauth error: … connection refused".
	case containsAny(msg, "connection refused", "no such host", "i/o timeout", "deadline exceeded", "connection reset", "dial tcp", "unsupported protocol scheme"):
		return sdk.KeyError(KeyCatalogURI, "cannot reach the REST catalog at %s (%s); check the URL and that the server is running", uri, firstLine(msg))
	case containsAny(msg, "unauthorized", "Unauthorized", "oauth error", "invalid_client", "forbidden", "Forbidden", "NotAuthorized"):
		key := KeyCredential
		if c.Props["credential"] == "" && c.Props["token"] != "" {
			key = KeyToken
		}
		return sdk.KeyError(key, "the REST catalog at %s refused the credentials (%s): check %s (client_id:client_secret) or %s",
			uri, firstLine(msg), KeyCredential, KeyToken)
	case c.Warehouse != "" && containsAny(msg, "bad request", "BadRequest", "warehouse", "NoSuchWarehouse", "not found"):
		return sdk.KeyError(KeyWarehouse, "the REST catalog at %s refused warehouse %q (%s): use a warehouse the catalog serves",
			uri, c.Warehouse, firstLine(msg))
	}
	return sdk.KeyError(KeyCatalogURI, "open the REST catalog at %s: %s", uri, firstLine(msg))
}

// ioProps is the file IO properties of the catalog props: the Apache
// sink's s3.path-style-access becomes iceberg-go's
// s3.force-virtual-addressing (its opposite) unless that is set.
func ioProps(props map[string]string) map[string]string {
	out := make(map[string]string, len(props)+1)
	for k, v := range props {
		out[k] = v
	}
	if v, ok := out[propS3PathStyle]; ok {
		delete(out, propS3PathStyle)
		if _, set := out[iceio.S3ForceVirtualAddressing]; !set {
			if strings.EqualFold(strings.TrimSpace(v), "true") {
				out[iceio.S3ForceVirtualAddressing] = "false"
			} else if strings.EqualFold(strings.TrimSpace(v), "false") {
				out[iceio.S3ForceVirtualAddressing] = "true"
			}
		}
	}
	return out
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// firstLine keeps an error short: SDK errors carry request ids and
// multi-line dumps after the first line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// redactURL hides a password in a URL for error messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// validPathStyle checks iceberg.catalog.s3.path-style-access.
func validPathStyle(props map[string]string) error {
	v, ok := props[propS3PathStyle]
	if !ok {
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false":
		return nil
	}
	return fmt.Errorf("%s: %q is not true or false", KeyS3PathStyle, v)
}
