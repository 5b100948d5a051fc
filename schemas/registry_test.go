package schemas

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fakeRegistry speaks the few Confluent Schema Registry REST paths the
// client uses, under an optional path prefix, with optional basic auth.
type fakeRegistry struct {
	prefix     string
	user, pass string

	mu       sync.Mutex
	texts    []string         // id-1 -> schema
	types    map[int]string   // id -> schemaType, when not AVRO
	refs     map[int][]any    // id -> references JSON
	subjects map[string][]int // subject -> ids by version
	hits     map[string]int   // "METHOD path" -> count
	block    chan struct{}    // when set, requests wait on it
}

func newFakeRegistry(prefix string) *fakeRegistry {
	return &fakeRegistry{prefix: prefix, types: map[int]string{}, refs: map[int][]any{}, subjects: map[string][]int{}, hits: map[string]int{}}
}

// add registers text under subject directly and returns its id.
func (f *fakeRegistry) add(subject, text string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addLocked(subject, text)
}

func (f *fakeRegistry) addLocked(subject, text string) int {
	id := 0
	for i, t := range f.texts {
		if t == text {
			id = i + 1
		}
	}
	if id == 0 {
		f.texts = append(f.texts, text)
		id = len(f.texts)
	}
	for _, v := range f.subjects[subject] {
		if v == id {
			return id
		}
	}
	f.subjects[subject] = append(f.subjects[subject], id)
	return id
}

func (f *fakeRegistry) hitCount(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[key]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.block != nil {
		<-f.block
	}
	if f.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != f.user || p != f.pass {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error_code": 401, "message": "Unauthorized"})
			return
		}
	}
	path, ok := strings.CutPrefix(r.URL.Path, f.prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits[r.Method+" "+path]++
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "schemas" && parts[1] == "ids":
		id, _ := strconv.Atoi(parts[2])
		if id < 1 || id > len(f.texts) {
			writeJSON(w, http.StatusNotFound, map[string]any{"error_code": 40403, "message": fmt.Sprintf("Schema %d not found", id)})
			return
		}
		resp := map[string]any{"schema": f.texts[id-1]}
		if t := f.types[id]; t != "" {
			resp["schemaType"] = t
		}
		if refs := f.refs[id]; refs != nil {
			resp["references"] = refs
		}
		writeJSON(w, http.StatusOK, resp)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		var req struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || (req.SchemaType != "" && req.SchemaType != "AVRO") {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error_code": 42201, "message": "bad request"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": f.addLocked(parts[1], req.Schema)})
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions":
		ids := f.subjects[parts[1]]
		if len(ids) == 0 {
			writeJSON(w, http.StatusNotFound, map[string]any{"error_code": 40401, "message": fmt.Sprintf("Subject '%s' not found.", parts[1])})
			return
		}
		version := len(ids)
		if parts[3] != "latest" {
			version, _ = strconv.Atoi(parts[3])
		}
		if version < 1 || version > len(ids) {
			writeJSON(w, http.StatusNotFound, map[string]any{"error_code": 40402, "message": "Version not found."})
			return
		}
		id := ids[version-1]
		writeJSON(w, http.StatusOK, map[string]any{"subject": parts[1], "version": version, "id": id, "schema": f.texts[id-1], "references": f.refs[id]})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error_code": 404, "message": "HTTP 404 Not Found"})
	}
}

const orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"ref","type":{"type":"string","logicalType":"uuid"}}]}`
const orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"ref","type":{"type":"string","logicalType":"uuid"}},{"name":"note","type":["null","string"],"default":null}]}`

func newTestRegistry(t *testing.T, cfg RegistryConfig) *Registry {
	t.Helper()
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryByIDCachesAndDecodes(t *testing.T) {
	fake := newFakeRegistry("")
	id := fake.add("orders-value", orderV1)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := newTestRegistry(t, RegistryConfig{URL: srv.URL})
	ctx := context.Background()

	reg, err := r.ByID(ctx, int32(id))
	if err != nil {
		t.Fatal(err)
	}
	if reg.ID != int32(id) || reg.Text != orderV1 || reg.Arrow.NumFields() != 2 || reg.Arrow.Field(1).Type.String() != "extension<arrow.uuid>" {
		t.Fatalf("registered = %+v, arrow %s", reg, reg.Arrow)
	}
	again, err := r.ByID(ctx, int32(id))
	if err != nil || again != reg {
		t.Fatalf("second ByID: %v, same %v", err, again == reg)
	}
	if n := fake.hitCount("GET /schemas/ids/1"); n != 1 {
		t.Errorf("registry asked %d times, want 1 (cached)", n)
	}

	// Each caller gets its own decoder.
	d1, d2 := reg.NewDecoder(), reg.NewDecoder()
	if d1 == d2 || d1.prog != d2.prog {
		t.Fatal("decoders must be distinct and share the compiled schema")
	}
	payload := marshal(t, reg.Avro, map[string]any{"id": int64(7), "ref": "123e4567-e89b-12d3-a456-426614174000"})
	batch, bad, err := d1.DecodeBatch(memory.NewGoAllocator(), [][]byte{payload})
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	defer batch.Release()
	if got := batch.Column(0).(*array.Int64).Value(0); got != 7 {
		t.Errorf("id = %d", got)
	}
}

func TestRegistryConcurrentByID(t *testing.T) {
	fake := newFakeRegistry("")
	id := fake.add("orders-value", orderV1)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := newTestRegistry(t, RegistryConfig{URL: srv.URL})
	var wg sync.WaitGroup
	results := make([]*Registered, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg, err := r.ByID(context.Background(), int32(id))
			if err != nil {
				t.Error(err)
			}
			results[i] = reg
		}()
	}
	wg.Wait()
	for _, reg := range results[1:] {
		if reg != results[0] {
			t.Fatal("concurrent callers got different Registered values")
		}
	}
}

func TestRegistryRegisterAndLatest(t *testing.T) {
	fake := newFakeRegistry("")
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := newTestRegistry(t, RegistryConfig{URL: srv.URL})
	ctx := context.Background()

	id1, err := r.Register(ctx, "orders-value", orderV1)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := r.Latest(ctx, "orders-value")
	if err != nil || latest.ID != id1 {
		t.Fatalf("latest = %v, %v; want id %d", latest, err, id1)
	}
	id2, err := r.Register(ctx, "orders-value", orderV2)
	if err != nil || id2 == id1 {
		t.Fatalf("second register: id %d, %v", id2, err)
	}
	latest, err = r.Latest(ctx, "orders-value")
	if err != nil || latest.ID != id2 || latest.Arrow.NumFields() != 3 {
		t.Fatalf("latest after v2 = %+v, %v; want id %d", latest, err, id2)
	}
	// Registering the same schema again returns the same id.
	if again, err := r.Register(ctx, "orders-value", orderV1); err != nil || again != id1 {
		t.Errorf("re-register = %d, %v; want %d", again, err, id1)
	}
	// Invalid Avro is rejected locally.
	before := fake.hitCount("POST /subjects/orders-value/versions")
	if _, err := r.Register(ctx, "orders-value", `{"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]}`); err == nil ||
		!strings.Contains(err.Error(), "not valid Avro") {
		t.Errorf("invalid schema: %v", err)
	}
	if fake.hitCount("POST /subjects/orders-value/versions") != before {
		t.Error("invalid schema was sent to the registry")
	}
}

func TestRegistryBasePathAndAuth(t *testing.T) {
	fake := newFakeRegistry("/apis/ccompat/v7")
	fake.user, fake.pass = "floe", "s3cret"
	id := fake.add("orders-value", orderV1)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	tests := []struct {
		name     string
		url      string
		user     string
		pass     string
		wantErr  string
		notFound bool
	}{
		{"path prefix and auth", srv.URL + "/apis/ccompat/v7", "floe", "s3cret", "", false},
		{"trailing slash", srv.URL + "/apis/ccompat/v7/", "floe", "s3cret", "", false},
		{"wrong password", srv.URL + "/apis/ccompat/v7", "floe", "wrong", "username and password", false},
		{"no credentials", srv.URL + "/apis/ccompat/v7", "", "", "username and password", false},
		{"missing path prefix", srv.URL, "floe", "s3cret", "same URL and path", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRegistry(t, RegistryConfig{URL: tt.url, Username: tt.user, Password: tt.pass})
			_, err := r.ByID(ctx, int32(id))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), srv.URL) ||
				!strings.Contains(err.Error(), "schema id 1") {
				t.Fatalf("err = %v, want it to name %s, the id and %q", err, srv.URL, tt.wantErr)
			}
			if errors.Is(err, ErrSchemaNotFound) != tt.notFound {
				t.Errorf("errors.Is(ErrSchemaNotFound) = %v", !tt.notFound)
			}
		})
	}
}

func TestRegistryErrors(t *testing.T) {
	fake := newFakeRegistry("")
	protoID := fake.add("p-value", `syntax = "proto3"; message M {}`)
	fake.types[protoID] = "PROTOBUF"
	recursiveID := fake.add("r-value", `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := newTestRegistry(t, RegistryConfig{URL: srv.URL})
	ctx := context.Background()

	_, err := r.ByID(ctx, 99)
	if !errors.Is(err, ErrSchemaNotFound) || !strings.Contains(err.Error(), "schema id 99") {
		t.Errorf("missing id: %v", err)
	}
	_, err = r.Latest(ctx, "nope-value")
	if !errors.Is(err, ErrSchemaNotFound) || !strings.Contains(err.Error(), `subject "nope-value"`) || !strings.Contains(err.Error(), "TopicNameStrategy") {
		t.Errorf("missing subject: %v", err)
	}
	// The registry answered: an unusable schema's error is the schema's,
	// and names the id but not the registry.
	var unusable *UnusableError
	_, err = r.ByID(ctx, int32(protoID))
	if !errors.As(err, &unusable) || !strings.Contains(err.Error(), "PROTOBUF") || strings.Contains(err.Error(), srv.URL) {
		t.Errorf("protobuf schema: %v", err)
	}
	_, err = r.ByID(ctx, int32(recursiveID))
	if !errors.As(err, &unusable) || !strings.Contains(err.Error(), "recursive") || strings.Count(err.Error(), "schema id 2") != 1 || strings.Contains(err.Error(), srv.URL) {
		t.Errorf("recursive schema: %v", err)
	}
	if unusable.What != "schema id 2" || strings.Contains(unusable.Err.Error(), "schema id") {
		t.Errorf("recursive schema: What %q, Err %q", unusable.What, unusable.Err)
	}

	srv.Close()
	_, err = r.ByID(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "reachable") {
		t.Errorf("unreachable registry: %v", err)
	}
}

func TestRegistryContext(t *testing.T) {
	fake := newFakeRegistry("")
	fake.add("orders-value", orderV1)
	fake.block = make(chan struct{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	defer close(fake.block)
	r := newTestRegistry(t, RegistryConfig{URL: srv.URL})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.ByID(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %s", d)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := r.Latest(done, "orders-value"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled ctx: %v", err)
	}
}

func TestRegistryReferences(t *testing.T) {
	fake := newFakeRegistry("")
	fake.add("shop.Address", `{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"zip","type":"string"}]}`)
	id := fake.add("orders-value", `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"ship_to","type":"shop.Address"}]}`)
	fake.refs[id] = []any{map[string]any{"name": "shop.Address", "subject": "shop.Address", "version": 1}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := newTestRegistry(t, RegistryConfig{URL: srv.URL})
	reg, err := r.ByID(context.Background(), int32(id))
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Arrow.Field(0).Type.String(); got != "struct<zip: utf8>" {
		t.Errorf("ship_to = %s", got)
	}
	if fake.hitCount("GET /subjects/shop.Address/versions/1") != 1 {
		t.Error("reference was not fetched by subject and version")
	}
}

func TestRegistryTLS(t *testing.T) {
	fake := newFakeRegistry("")
	id := fake.add("orders-value", orderV1)
	dir := t.TempDir()
	clientCert, clientKey := writeClientCert(t, dir)

	quiet := log.New(io.Discard, "", 0) // expected handshake failures
	srv := httptest.NewUnstartedServer(fake)
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven}
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	mtls := httptest.NewUnstartedServer(fake)
	mtls.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	mtls.Config.ErrorLog = quiet
	mtls.StartTLS()
	defer mtls.Close()
	mtlsCA := filepath.Join(dir, "mtls-ca.pem")
	if err := os.WriteFile(mtlsCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mtls.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		cfg     RegistryConfig
		wantErr string
	}{
		{"trusted CA", RegistryConfig{URL: srv.URL, CAFile: caFile}, ""},
		{"unknown CA", RegistryConfig{URL: srv.URL}, "CAFile"},
		{"insecure", RegistryConfig{URL: srv.URL, InsecureSkipVerify: true}, ""},
		{"client certificate", RegistryConfig{URL: mtls.URL, CAFile: mtlsCA, CertFile: clientCert, KeyFile: clientKey}, ""},
		{"client certificate missing", RegistryConfig{URL: mtls.URL, CAFile: mtlsCA}, "TLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRegistry(t, tt.cfg)
			_, err := r.ByID(context.Background(), int32(id))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
			t.Log(err)
		})
	}
}

// writeClientCert writes a self-signed client certificate and key as PEM.
func writeClientCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "floe-test-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestNewRegistryConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  RegistryConfig
		want string
	}{
		{"empty URL", RegistryConfig{}, "URL is empty"},
		{"no scheme", RegistryConfig{URL: "localhost:8081"}, "not an http(s) URL"},
		{"ftp", RegistryConfig{URL: "ftp://host"}, "not an http(s) URL"},
		{"username only", RegistryConfig{URL: "http://h", Username: "u"}, "both username and password"},
		{"missing CA file", RegistryConfig{URL: "https://h", CAFile: filepath.Join(dir, "nope.pem")}, "read CA file"},
		{"CA file without PEM", RegistryConfig{URL: "https://h", CAFile: notPEM}, "no PEM certificates"},
		{"cert without key", RegistryConfig{URL: "https://h", CertFile: "c.pem"}, "both CertFile and KeyFile"},
		{"bad strategy", RegistryConfig{URL: "http://h", SubjectStrategy: "TopicStrategy"}, "unknown subject name strategy"},
		{"password not in messages", RegistryConfig{URL: "http://u:hunter2@h", SubjectStrategy: "x"}, "u:xxxxx@h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRegistry(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("password leaked: %v", err)
			}
		})
	}
}

func TestSubject(t *testing.T) {
	tests := []struct {
		strategy, topic, record string
		isKey                   bool
		want, err               string
	}{
		{"", "orders", "shop.Order", false, "orders-value", ""},
		{"", "orders", "", true, "orders-key", ""},
		{"TopicNameStrategy", "orders", "", false, "orders-value", ""},
		{"io.confluent.kafka.serializers.subject.TopicNameStrategy", "orders", "", false, "orders-value", ""},
		{"RecordNameStrategy", "orders", "shop.Order", false, "shop.Order", ""},
		{"io.confluent.kafka.serializers.subject.RecordNameStrategy", "", "shop.Order", true, "shop.Order", ""},
		{"TopicRecordNameStrategy", "orders", "shop.Order", false, "orders-shop.Order", ""},
		{"io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", "orders", "shop.Order", false, "orders-shop.Order", ""},
		{"", "", "shop.Order", false, "", "needs the topic"},
		{"RecordNameStrategy", "orders", "", false, "", "needs the record full name"},
		{"TopicRecordNameStrategy", "orders", "", false, "", "needs the record full name"},
		{"com.example.MyStrategy", "orders", "shop.Order", false, "", "unknown subject name strategy"},
	}
	for _, tt := range tests {
		got, err := Subject(tt.strategy, tt.topic, tt.record, tt.isKey)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Subject(%q, %q, %q) err = %v, want %q", tt.strategy, tt.topic, tt.record, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Subject(%q, %q, %q, %v) = %q, %v; want %q", tt.strategy, tt.topic, tt.record, tt.isKey, got, err, tt.want)
		}
	}
	r := newTestRegistry(t, RegistryConfig{URL: "http://localhost:1", SubjectStrategy: "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
	if got, err := r.Subject("orders", "shop.Order", false); err != nil || got != "shop.Order" {
		t.Errorf("Registry.Subject = %q, %v", got, err)
	}
}

// TestRegistryIntegration runs against a real registry when
// FLOE_SCHEMA_REGISTRY_URL is set (for Apicurio, include /apis/ccompat/v7).
func TestRegistryIntegration(t *testing.T) {
	url := os.Getenv("FLOE_SCHEMA_REGISTRY_URL")
	if url == "" {
		t.Skip("FLOE_SCHEMA_REGISTRY_URL is not set; skipping the real Schema Registry test")
	}
	r := newTestRegistry(t, RegistryConfig{URL: url,
		Username: os.Getenv("FLOE_SCHEMA_REGISTRY_USERNAME"), Password: os.Getenv("FLOE_SCHEMA_REGISTRY_PASSWORD")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject := fmt.Sprintf("floe-schemas-test-%d-value", time.Now().UnixNano())
	id, err := r.Register(ctx, subject, orderV1)
	if err != nil {
		t.Fatal(err)
	}
	byID, err := r.ByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := r.Latest(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if latest.ID != id || byID.Arrow.NumFields() != 2 {
		t.Errorf("latest id %d, registered %d, fields %d", latest.ID, id, byID.Arrow.NumFields())
	}
	id2, err := r.Register(ctx, subject, orderV2)
	if err != nil {
		t.Fatal(err)
	}
	if latest, err = r.Latest(ctx, subject); err != nil || latest.ID != id2 {
		t.Errorf("latest after v2: %v, %v; want id %d", latest, err, id2)
	}
}
