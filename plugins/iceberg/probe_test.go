package iceberg

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

const (
	avroV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}`
	avroAddOptional = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null},
		{"name":"note","type":["null","string"],"default":null}]}`
	avroIDString = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"name","type":["null","string"],"default":null}]}`
)

// fakeRegistry answers GET /subjects/<s>/versions/latest with the schema
// set for s (404 without one), after delay. It counts the requests.
type fakeRegistry struct {
	*httptest.Server
	mu       sync.Mutex
	latest   map[string]string
	delay    time.Duration
	requests int
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	r := &fakeRegistry{latest: map[string]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests++
		delay := r.delay
		subject, ok := strings.CutSuffix(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions/latest")
		text, found := r.latest[subject]
		r.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
				return
			}
		}
		if !ok || !found {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 40401, "message": "Subject '" + subject + "' not found."})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"subject": subject, "version": 2, "id": 7, "schema": text})
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *fakeRegistry) set(subject, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest[subject] = text
}

func (r *fakeRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// probe runs the sink's spec as config/validate does: fields and checks,
// then the probes.
func probe(t *testing.T, cfg map[string]string) []sdk.ConfigError {
	t.Helper()
	spec := Spec()
	if errs := spec.Validate(cfg); len(errs) > 0 {
		t.Fatalf("the config does not validate: %q", errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return spec.Probe(ctx, cfg)
}

// The probe checks the subject's latest schema against the existing table
// the way PrepareSchema would, and stays quiet about what cannot be known
// before data.
func TestProbeEvolution(t *testing.T) {
	reg := newFakeRegistry(t)
	f := newFixture(t, map[string]string{keyTables: "shop.orders", keyTopics: "orders", keyRegistryURL: reg.URL})

	if errs := probe(t, f.cfg); len(errs) != 0 {
		t.Fatalf("no table yet: %q, want no problem", errs)
	}
	if reg.count() != 0 {
		t.Errorf("the registry was asked %d times before any table existed", reg.count())
	}

	v1, err := schemas.ArrowSchema(avro.MustParse(avroV1))
	if err != nil {
		t.Fatal(err)
	}
	prepare(t, f.open(1), 1, v1)

	t.Run("subject without versions", func(t *testing.T) {
		if errs := probe(t, f.cfg); len(errs) != 0 {
			t.Errorf("got %q, want no problem", errs)
		}
	})
	t.Run("compatible", func(t *testing.T) {
		reg.set("orders-value", avroAddOptional)
		if errs := probe(t, f.cfg); len(errs) != 0 {
			t.Errorf("an added optional field: %q, want no problem", errs)
		}
	})
	t.Run("type change", func(t *testing.T) {
		reg.set("orders-value", avroIDString)
		errs := probe(t, f.cfg)
		if len(errs) != 1 || errs[0].Key != keyTopics {
			t.Fatalf("long → string: %q, want one problem on %s", errs, keyTopics)
		}
		t.Log(errs[0].Message)
		for _, want := range []string{`"orders-value"`, "shop.orders", "field id", "long", "string"} {
			if !strings.Contains(errs[0].Message, want) {
				t.Errorf("message %q does not name %s", errs[0].Message, want)
			}
		}
	})
	t.Run("evolution disabled", func(t *testing.T) {
		reg.set("orders-value", avroAddOptional)
		errs := probe(t, with(f.cfg, keyEvolve, "false"))
		if len(errs) != 1 || errs[0].Key != keyTopics || !strings.Contains(errs[0].Message, "add optional column note") {
			t.Errorf("got %q, want the needed change refused on %s", errs, keyTopics)
		}
	})
	t.Run("unknowable subjects", func(t *testing.T) {
		reg.set("orders-value", avroIDString)
		before := reg.count()
		for name, cfg := range map[string]map[string]string{
			"topics.regex":       with(with(f.cfg, keyTopics, ""), keyTopicsRegex, "orders.*"),
			"RecordNameStrategy": with(f.cfg, keySubjectStrategy, "io.confluent.kafka.serializers.subject.RecordNameStrategy"),
			"dynamic routing":    with(with(with(f.cfg, keyTables, ""), keyDynamic, "true"), keyRouteField, "name"),
		} {
			if errs := probe(t, cfg); len(errs) != 0 {
				t.Errorf("%s: %q, want the probe skipped", name, errs)
			}
		}
		if n := reg.count() - before; n != 0 {
			t.Errorf("the registry was asked %d times", n)
		}
	})
	t.Run("slow registry", func(t *testing.T) {
		reg.mu.Lock()
		reg.delay = 2 * time.Second
		reg.mu.Unlock()
		defer func() { reg.mu.Lock(); reg.delay = 0; reg.mu.Unlock() }()
		start := time.Now()
		errs := probe(t, with(f.cfg, keyRegistryTimeout, "300"))
		if len(errs) != 1 || errs[0].Key != keyRegistryURL || !strings.Contains(errs[0].Message, "timeout after") ||
			!strings.Contains(errs[0].Message, reg.URL) {
			t.Errorf("got %q, want a timeout naming the registry on %s", errs, keyRegistryURL)
		}
		t.Log(errs)
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("took %v: the request timeout did not apply", took)
		}
	})
	t.Run("unreachable catalog", func(t *testing.T) {
		// probeCatalog reports it on the URI, as Open would at start.
		bad := with(with(f.cfg, keyCatalogType, "sql"), keyCatalogURI, "postgres://floe@127.0.0.1:1/catalog?sslmode=disable")
		errs := probe(t, bad)
		if len(errs) != 1 || errs[0].Key != keyCatalogURI || !strings.Contains(errs[0].Message, "127.0.0.1:1") {
			t.Errorf("got %q, want one problem naming the catalog on %s", errs, keyCatalogURI)
		}
	})
	t.Run("unreachable registry", func(t *testing.T) {
		errs := probe(t, with(f.cfg, keyRegistryURL, "http://127.0.0.1:1"))
		if len(errs) != 1 || errs[0].Key != keyRegistryURL || !strings.Contains(errs[0].Message, "127.0.0.1:1") {
			t.Errorf("got %q, want a problem naming the registry on %s", errs, keyRegistryURL)
		}
	})
}

// with returns a copy of cfg with key set to v ("" deletes it).
func with(cfg map[string]string, key, v string) map[string]string {
	out := make(map[string]string, len(cfg)+1)
	for k, val := range cfg {
		out[k] = val
	}
	if v == "" {
		delete(out, key)
	} else {
		out[key] = v
	}
	return out
}
