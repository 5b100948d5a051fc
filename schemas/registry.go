package schemas

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/riferrei/srclient"
)

// ErrSchemaNotFound is returned (wrapped) by Registry.ByID and
// Registry.Latest when the registry answers 404: no schema has that id, or
// the subject has no versions.
var ErrSchemaNotFound = errors.New("schema not found")

// UnusableError is returned by Registry.ByID and Registry.Latest when the
// registry answered with a schema floe cannot use: not Avro, invalid
// Avro, a type that cannot be a column (a recursive record), or a
// reference that does not parse. That is the producer's problem, not the
// registry's, so the error does not name the registry; What says which
// schema ("schema id 19", "subject \"orders-value\""), Err why.
type UnusableError struct {
	What string
	Err  error
}

func (e *UnusableError) Error() string { return e.What + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnusableError) Unwrap() error { return e.Err }

// DefaultRegistryTimeout bounds each HTTP request to the registry when
// RegistryConfig.Timeout is zero.
const DefaultRegistryTimeout = 10 * time.Second

// maxReferenceDepth bounds chains of schema references.
const maxReferenceDepth = 16

// RegistryConfig configures a Schema Registry client.
type RegistryConfig struct {
	// URL is the registry's base URL, including any path prefix, such as
	// http://host:8081 or http://host:8080/apis/ccompat/v7 for Apicurio.
	URL string
	// Username and Password enable HTTP basic auth; set both or neither.
	Username, Password string
	// CAFile is a PEM bundle of the CAs to trust for an https URL, used
	// instead of the system's CA pool.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and key for mutual
	// TLS; set both or neither.
	CertFile, KeyFile string
	// InsecureSkipVerify disables server certificate checks (testing only).
	InsecureSkipVerify bool
	// SubjectStrategy is the subject name strategy used by
	// Registry.Subject: TopicNameStrategy (default), RecordNameStrategy or
	// TopicRecordNameStrategy, or Confluent's Java class name for one.
	SubjectStrategy string
	// Timeout bounds each HTTP request; zero means DefaultRegistryTimeout.
	Timeout time.Duration
}

// Registry is a Confluent-compatible Schema Registry client for Avro
// schemas. It is safe for concurrent use. Schemas fetched by id are cached
// for the Registry's lifetime (ids are immutable); Latest always asks the
// registry.
//
// Requests run through riferrei/srclient, which takes no context: when ctx
// ends first the method returns ctx.Err() while the request finishes in the
// background, bounded by the timeout.
type Registry struct {
	url      string // redacted, for messages
	strategy string
	client   *srclient.SchemaRegistryClient

	mu   sync.Mutex
	byID map[int32]*Registered
}

// Registered is an Avro schema from the registry, parsed and mapped to
// Arrow. It is immutable and shared by all callers of a Registry.
type Registered struct {
	ID    int32
	Text  string        // the schema as the registry returned it
	Avro  avro.Schema   // parsed with its references, in a private name cache
	Arrow *arrow.Schema // ArrowSchema(Avro): the value columns
	prog  *program
}

// NewDecoder returns a decoder for this schema. Decoders are not safe for
// concurrent use; get one per goroutine (they share the compiled schema,
// so this is cheap).
func (r *Registered) NewDecoder() *Decoder { return newDecoder(r.prog) }

// newRegistered parses a schema text (whose references are already in
// cache) and compiles it.
func newRegistered(id int32, text string, cache *avro.SchemaCache) (*Registered, error) {
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("parse Avro schema: %w", err)
	}
	dec, err := NewDecoder(s)
	if err != nil {
		return nil, err
	}
	return &Registered{ID: id, Text: text, Avro: s, Arrow: dec.Schema(), prog: dec.prog}, nil
}

// NewRegistry checks cfg and builds a client. It does not contact the
// registry.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	if cfg.URL == "" {
		return nil, errors.New("schema registry: URL is empty: set the registry's base URL, e.g. http://localhost:8081")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("schema registry: URL %q is not an http(s) URL with a host", cfg.URL)
	}
	redacted := u.Redacted()
	strategy, err := normalizeStrategy(cfg.SubjectStrategy)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", redacted, err)
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, fmt.Errorf("schema registry %s: set both username and password for basic auth, or neither", redacted)
	}
	tlsCfg, err := registryTLS(cfg)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", redacted, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultRegistryTimeout
	}
	// srclient appends paths such as "/schemas/ids/1" to the URL as a
	// string, so a trailing slash would make "//schemas".
	client := srclient.NewSchemaRegistryClient(strings.TrimRight(cfg.URL, "/"),
		srclient.WithClient(&http.Client{Transport: transport, Timeout: timeout}))
	client.CachingEnabled(false) // it would cache "latest" forever; ids are cached here
	client.CodecCreationEnabled(false)
	if cfg.Username != "" {
		client.SetCredentials(cfg.Username, cfg.Password)
	}
	return &Registry{url: redacted, strategy: strategy, client: client, byID: map[int32]*Registered{}}, nil
}

func registryTLS(cfg RegistryConfig) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // opt-in for tests
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s has no PEM certificates", cfg.CAFile)
		}
		t.RootCAs = pool
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("set both CertFile and KeyFile for a TLS client certificate, or neither")
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate %s / key %s: %w", cfg.CertFile, cfg.KeyFile, err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// Subject returns the subject for topic under the configured strategy; see
// the package-level Subject.
func (r *Registry) Subject(topic, recordFullName string, isKey bool) (string, error) {
	return Subject(r.strategy, topic, recordFullName, isKey)
}

// ByID returns the schema with the given id, from the cache or the
// registry. The error names the id; it is an *UnusableError when the
// registry answered with a schema floe cannot use, and otherwise names the
// registry too and wraps ErrSchemaNotFound on 404.
func (r *Registry) ByID(ctx context.Context, id int32) (*Registered, error) {
	if reg := r.cached(id); reg != nil {
		return reg, nil
	}
	what := "schema id " + strconv.Itoa(int(id))
	s, err := call(ctx, func() (*srclient.Schema, error) { return r.client.GetSchema(int(id)) })
	if err != nil {
		return nil, r.wrap(err, what, "check that the producer used this registry (same URL and path) and that the schema was not deleted")
	}
	return r.build(ctx, what, id, s)
}

// Latest returns the latest version of subject, always asking the
// registry (new versions may have been registered).
func (r *Registry) Latest(ctx context.Context, subject string) (*Registered, error) {
	what := fmt.Sprintf("subject %q", subject)
	s, err := call(ctx, func() (*srclient.Schema, error) { return r.client.GetLatestSchema(subject) })
	if err != nil {
		return nil, r.wrap(err, what+": latest version", "check the subject name and the subject name strategy ("+r.strategy+")")
	}
	id := int32(s.ID())
	if reg := r.cached(id); reg != nil {
		return reg, nil
	}
	return r.build(ctx, what, id, s)
}

// Register registers an Avro schema under subject and returns its id (the
// existing id if the registry already has the same schema). The schema is
// parsed locally first, so invalid Avro never reaches the registry.
func (r *Registry) Register(ctx context.Context, subject, schemaText string) (int32, error) {
	what := fmt.Sprintf("register under subject %q", subject)
	if _, err := avro.ParseWithCache(schemaText, "", &avro.SchemaCache{}); err != nil {
		return 0, fmt.Errorf("schema registry %s: %s: the schema is not valid Avro: %w", r.url, what, err)
	}
	s, err := call(ctx, func() (*srclient.Schema, error) {
		return r.client.CreateSchema(subject, schemaText, srclient.Avro)
	})
	if err != nil {
		return 0, r.wrap(err, what, "check the subject name and that the schema is compatible with the subject's earlier versions")
	}
	return int32(s.ID()), nil
}

func (r *Registry) cached(id int32) *Registered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// build resolves references, parses and compiles a fetched schema and
// caches it by id.
func (r *Registry) build(ctx context.Context, what string, id int32, s *srclient.Schema) (*Registered, error) {
	if t := s.SchemaType(); t != nil && *t != srclient.Avro {
		return nil, &UnusableError{What: what, Err: fmt.Errorf("a %s schema; floe reads Avro only: check the producer's serializer", *t)}
	}
	cache := &avro.SchemaCache{}
	if err := r.loadReferences(ctx, s.References(), cache, 0); err != nil {
		var unusable *UnusableError
		if errors.As(err, &unusable) {
			return nil, &UnusableError{What: what, Err: err}
		}
		return nil, fmt.Errorf("schema registry %s: %s: %w", r.url, what, err)
	}
	reg, err := newRegistered(id, s.Schema(), cache)
	if err != nil {
		return nil, &UnusableError{What: what, Err: err}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := r.byID[id]; prev != nil {
		return prev, nil
	}
	r.byID[id] = reg
	return reg, nil
}

// loadReferences parses referenced schemas (depth first) into cache so the
// referring schema can name their types.
func (r *Registry) loadReferences(ctx context.Context, refs []srclient.Reference, cache *avro.SchemaCache, depth int) error {
	if len(refs) == 0 {
		return nil
	}
	if depth >= maxReferenceDepth {
		return &UnusableError{What: "schema references", Err: fmt.Errorf("nest deeper than %d levels", maxReferenceDepth)}
	}
	for _, ref := range refs {
		s, err := call(ctx, func() (*srclient.Schema, error) { return r.client.GetSchemaByVersion(ref.Subject, ref.Version) })
		if err != nil {
			return r.wrap(err, fmt.Sprintf("reference %s (subject %q version %d)", ref.Name, ref.Subject, ref.Version),
				"check that the referenced subject and version exist")
		}
		if err := r.loadReferences(ctx, s.References(), cache, depth+1); err != nil {
			return err
		}
		if _, err := avro.ParseWithCache(s.Schema(), "", cache); err != nil {
			return &UnusableError{What: fmt.Sprintf("reference %s (subject %q version %d)", ref.Name, ref.Subject, ref.Version), Err: fmt.Errorf("parse Avro schema: %w", err)}
		}
	}
	return nil
}

// call runs fn, returning early with ctx.Err() if ctx ends first.
func call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case res := <-ch:
		return res.v, res.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// wrap adds the registry URL, what was asked and a hint on what to check.
func (r *Registry) wrap(err error, what, notFoundHint string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("schema registry %s: %s: %w", r.url, what, err)
	}
	status := httpStatus(err)
	err = trimmedError{err}
	var hint string
	var tlsErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var netErr net.Error
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		hint = "check the username and password (basic auth) and the account's permissions"
	case status == http.StatusNotFound:
		return fmt.Errorf("schema registry %s: %s: %w: %w: %s", r.url, what, ErrSchemaNotFound, err, notFoundHint)
	case status >= 500:
		hint = "the registry failed; check its logs"
	case status > 0:
		hint = notFoundHint
	case errors.As(err, &tlsErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		hint = "check the TLS settings: CAFile must hold the CA that signed the registry's certificate, CertFile/KeyFile a client certificate it accepts"
	case errors.As(err, &netErr):
		hint = "check the URL and that the registry is running and reachable"
	default:
		hint = "check the URL (including any path prefix such as /apis/ccompat/v7) and that it points at a Schema Registry"
	}
	return fmt.Errorf("schema registry %s: %s: %w (%s)", r.url, what, err, hint)
}

// trimmedError drops the trailing newline srclient leaves in errors that
// carry the registry's response body.
type trimmedError struct{ err error }

func (e trimmedError) Error() string { return strings.TrimSpace(e.err.Error()) }
func (e trimmedError) Unwrap() error { return e.err }

// httpStatus extracts the HTTP status from a srclient error: its Error
// carries Confluent's error_code (HTTP status × 100 + detail, e.g. 40403),
// and for non-JSON bodies it returns the status line ("401 Unauthorized").
func httpStatus(err error) int {
	var srErr srclient.Error
	if errors.As(err, &srErr) {
		if srErr.Code >= 10000 {
			return srErr.Code / 100
		}
		if srErr.Code >= 100 {
			return srErr.Code
		}
	}
	msg := err.Error()
	if len(msg) >= 4 && msg[3] == ' ' {
		if code, convErr := strconv.Atoi(msg[:3]); convErr == nil && code >= 100 && code < 600 {
			return code
		}
	}
	return 0
}
