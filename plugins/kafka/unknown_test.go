package kafka

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
)

// forgetfulRegistry is the real registry behind a proxy that answers
// "schema not found" (404, Confluent's error 40403) for the hidden ids,
// as a registry restarted with empty storage would until the schemas are
// registered again. It counts the lookups of each id.
type forgetfulRegistry struct {
	URL string

	mu      sync.Mutex
	hidden  map[int32]bool
	lookups map[int32]int
}

func newForgetfulRegistry(t *testing.T, registryURL string, hidden ...int32) *forgetfulRegistry {
	t.Helper()
	target, err := url.Parse(registryURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &forgetfulRegistry{hidden: map[int32]bool{}, lookups: map[int32]int{}}
	for _, id := range hidden {
		f.hidden[id] = true
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = target.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, target.Path)
		if idText, ok := strings.CutPrefix(rest, "/schemas/ids/"); ok {
			idText, _, _ = strings.Cut(idText, "/")
			if id, err := strconv.ParseInt(idText, 10, 32); err == nil {
				f.mu.Lock()
				f.lookups[int32(id)]++
				hide := f.hidden[int32(id)]
				f.mu.Unlock()
				if hide {
					w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"error_code":40403,"message":"Schema not found"}`))
					return
				}
			}
		}
		r.URL.Path = rest
		r.URL.RawPath = ""
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + target.Path
	return f
}

// reveal makes the registry know id again.
func (f *forgetfulRegistry) reveal(id int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.hidden, id)
}

func (f *forgetfulRegistry) lookupsOf(id int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookups[id]
}

// A schema id the registry does not know yet is asked again with backoff:
// once the registry knows it (within schema.registry.unknown.timeout.ms)
// its records arrive, none is dead-lettered, and they arrive in order
// after the records of the known schema before them.
func TestUnknownSchemaIDWaitsForTheRegistry(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("forgotten")
	createTopic(t, env, topic, 1)
	os := registerOrders(t, env, topic+"-value")
	reg := newForgetfulRegistry(t, env.RegistryURL, os.ids[1])
	var recs []kafkatest.Record
	for i := range 10 {
		recs = append(recs, kafkatest.Record{Value: os.order(t, i/5, int64(i))}) // 0-4 in v1, 5-9 in v2 (hidden)
	}
	produce(t, env, topic, 0, recs)
	cfg := baseConfig(env, topic)
	cfg[KeyRegistryURL] = reg.URL
	cfg[KeyRegistryUnknownTimeout] = "30000"
	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "forgotten", 0, 1, h, cfg)
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	defer func() { _ = r.halt() }()

	if !l.waitFor(30*time.Second, func() bool { return l.positions()[topic+"/0"] >= 5 || r.failed() != nil }) {
		t.Fatalf("the v1 records did not arrive: %v (positions %v)", r.failed(), l.positions())
	}
	// The v2 records wait: asked again (with backoff), never dead-lettered.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && reg.lookupsOf(os.ids[1]) < 3 {
		time.Sleep(50 * time.Millisecond)
	}
	if n := reg.lookupsOf(os.ids[1]); n < 3 {
		t.Errorf("the unknown id was asked %d times in 2 s; want it asked again with backoff", n)
	}
	if p := l.positions()[topic+"/0"]; p != 5 || len(h.deadLetters()) != 0 {
		t.Fatalf("while the id is unknown: position %d, %d dead letters; want 5 and none", p, len(h.deadLetters()))
	}
	revealed := time.Now()
	reg.reveal(os.ids[1])
	if !l.waitFor(30*time.Second, func() bool { return l.positions()[topic+"/0"] >= 10 || r.failed() != nil }) {
		t.Fatalf("the v2 records did not arrive once the registry knew their id: %v (positions %v)", r.failed(), l.positions())
	}
	t.Logf("v2 records arrived %v after the registry knew the id", time.Since(revealed).Round(time.Millisecond))
	if took := time.Since(revealed); took > 6*time.Second {
		t.Errorf("took %v after the id was known; the backoff is capped at %v", took, maxRegistryBackoff)
	}
	distinct, dups := l.rows()
	if distinct != 10 || dups != 0 || l.skipped != 0 || len(h.deadLetters()) != 0 {
		t.Errorf("%d rows (%d dups), %d skipped, %d dead letters; want 10 rows, nothing skipped", distinct, dups, l.skipped, len(h.deadLetters()))
	}
}

// After schema.registry.unknown.timeout.ms the records of an id the
// registry still does not know go to the dead-letter queue, naming the key;
// the id is still asked, so once it is registered the records after it
// arrive again (the verdict is not cached for the task's lifetime).
func TestUnknownSchemaIDDeadLettersThenHeals(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("forgotten")
	createTopic(t, env, topic, 1)
	os := registerOrders(t, env, topic+"-value")
	reg := newForgetfulRegistry(t, env.RegistryURL, os.ids[0])
	batch := func(from int) []kafkatest.Record {
		var recs []kafkatest.Record
		for i := from; i < from+3; i++ {
			recs = append(recs, kafkatest.Record{Value: os.order(t, 0, int64(i))})
		}
		return recs
	}
	produce(t, env, topic, 0, batch(0))
	cfg := baseConfig(env, topic)
	cfg[KeyRegistryURL] = reg.URL
	cfg[KeyRegistryUnknownTimeout] = "700"
	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "forgotten", 0, 1, h, cfg)
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	defer func() { _ = r.halt() }()

	start := time.Now()
	if !l.waitFor(30*time.Second, func() bool { return l.positions()[topic+"/0"] >= 3 || r.failed() != nil }) {
		t.Fatalf("the records of the unknown id were not dead-lettered: %v (positions %v)", r.failed(), l.positions())
	}
	if took := time.Since(start); took < 700*time.Millisecond {
		t.Errorf("dead-lettered after %v, before the 700 ms %s", took, KeyRegistryUnknownTimeout)
	}
	letters := h.deadLetters()
	if len(letters) != 3 {
		t.Fatalf("%d dead letters, want 3", len(letters))
	}
	for _, d := range letters {
		if d.Stage != stageDeserialize || !strings.Contains(d.Reason, "unknown schema id") || !strings.Contains(d.Reason, KeyRegistryUnknownTimeout) {
			t.Errorf("dead letter at %d: stage %q reason %q; want stage deserialize naming %s", d.Offset, d.Stage, d.Reason, KeyRegistryUnknownTimeout)
		}
	}

	// The verdict holds until the id's next lookup is due (at most
	// maxRegistryBackoff later); records after that are read again.
	reg.reveal(os.ids[0])
	time.Sleep(maxRegistryBackoff + 500*time.Millisecond)
	produce(t, env, topic, 0, batch(3))
	if !l.waitFor(30*time.Second, func() bool { return l.positions()[topic+"/0"] >= 6 || r.failed() != nil }) {
		t.Fatalf("the records after the id was registered did not arrive: %v (positions %v)", r.failed(), l.positions())
	}
	distinct, dups := l.rows()
	if distinct != 3 || dups != 0 || len(h.deadLetters()) != 3 {
		t.Errorf("%d rows (%d dups), %d dead letters; want the 3 later records as rows and only the 3 earlier ones dead-lettered",
			distinct, dups, len(h.deadLetters()))
	}
}
