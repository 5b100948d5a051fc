package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestLakeCatalogFaults puts a fault-injecting proxy between floe and the
// REST catalog and answers table commits as a production catalog may:
// 409 CommitFailedException without applying the commit, 503 and 502
// before the commit reached the catalog, and 503 and 504 after it was
// applied (the commit's fate unknown to floe: the retry meets its own
// snapshot); then it holds the connection open and never answers, before
// and after the commit applied, until floe's request timeout
// (iceberg.commit.request-timeout-ms, 3 s here) gives up on it, which
// also leaves the commit's fate unknown. Each fault hits two commits in a
// row while a feeder produces; the connector must keep RUNNING, commit
// again by itself, and the tables must hold every produced record once
// (DuckDB from S3, then PyIceberg through the catalog).
func TestLakeCatalogFaults(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 6*time.Minute)
	proxy := newCatalogProxy(t, env.Lake.RESTURI)
	lake := env.Lake
	lake.RESTURI = proxy.url
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "faults", lake: &lake,
		extra: map[string]string{"iceberg.commit.request-timeout-ms": "3000"}})

	faults := []catalogFault{
		{status: http.StatusConflict, errType: "CommitFailedException"},
		{status: http.StatusServiceUnavailable, errType: "ServiceUnavailableException"},
		{status: http.StatusBadGateway, errType: "BadGatewayException"},
		{status: http.StatusServiceUnavailable, errType: "ServiceUnavailableException", afterApply: true},
		{status: http.StatusGatewayTimeout, errType: "GatewayTimeoutException", afterApply: true},
		{hang: true},
		{hang: true, afterApply: true},
	}
	for _, f := range faults {
		before := r.waitCommitted(ctx, r.committed(ctx)+500)
		began := time.Now()
		proxy.arm(f, 2)
		for proxy.pending() > 0 {
			if time.Since(began) > time.Minute {
				t.Fatalf("%s: no commit reached the catalog in a minute (%d faults not served)", f, proxy.pending())
			}
			assertRunning(t, ctx, r, f.String())
			time.Sleep(200 * time.Millisecond)
		}
		after := r.waitCommitted(ctx, before+1000)
		assertRunning(t, ctx, r, f.String())
		t.Logf("%s on 2 commits: committed %d before, %d after; next commits %.1f s after arming", f, before, after, time.Since(began).Seconds())
	}
	for _, engine := range harness.Engines {
		res := r.check(ctx, engine, engine == harness.PyIceberg)
		t.Logf("after %d faults: %s read %d rows (rare %d): lost %d, duplicated %d", 2*len(faults), engine, res.rows, res.rareRows, res.lost, res.duplicated)
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// assertRunning fails the test if a task or the connector failed.
func assertRunning(t *testing.T, ctx context.Context, r *rig, during string) {
	t.Helper()
	st, err := r.f.API.Status(ctx, r.opts.name)
	if err != nil {
		t.Fatalf("status during %s: %v", during, err)
	}
	if failed := st.Failed(); failed != "" {
		t.Fatalf("the connector failed during %s:\n%s", during, failed)
	}
}

// catalogFault is how the proxy answers one table commit.
type catalogFault struct {
	status  int
	errType string
	// afterApply forwards the commit first, so the catalog applies it,
	// then answers the fault instead of the catalog's answer.
	afterApply bool
	// hang answers nothing: the connection stays open until the client
	// gives up.
	hang bool
}

func (f catalogFault) String() string {
	when := "before the commit"
	if f.afterApply {
		when = "after the commit applied"
	}
	if f.hang {
		return "no answer " + when
	}
	return fmt.Sprintf("%d %s %s", f.status, f.errType, when)
}

// catalogProxy forwards every request to the REST catalog and answers
// the next armed number of table commits with a fault.
type catalogProxy struct {
	url string
	mu  sync.Mutex
	// fault and left are the armed fault and how many commits it still hits.
	fault catalogFault
	left  int
	// done is closed when the test ends, releasing hanging answers.
	done chan struct{}
}

// commitPath matches the REST API's update-table endpoint (a POST to
// /v1/{prefix}/namespaces/{ns}/tables/{table}) and the multi-table one.
var commitPath = regexp.MustCompile(`/namespaces/[^/]+/tables/[^/]+$|/transactions/commit$`)

func newCatalogProxy(t *testing.T, target string) *catalogProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("REST catalog URL %q: %v", target, err)
	}
	p := &catalogProxy{done: make(chan struct{})}
	forward := httputil.NewSingleHostReverseProxy(u)
	forward.ErrorHandler = func(w http.ResponseWriter, req *http.Request, err error) {
		// A client that gave up (floe stopping, a cancelled poll) is not
		// the catalog failing.
		if !errors.Is(err, context.Canceled) {
			t.Logf("proxy: %s %s: %v", req.Method, req.URL.Path, err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f, hit := p.take(req)
		if !hit {
			forward.ServeHTTP(w, req)
			return
		}
		if f.afterApply {
			rec := httptest.NewRecorder()
			forward.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Errorf("proxy: the catalog answered the forwarded commit %s with %d: %s", req.URL.Path, rec.Code, rec.Body)
			}
		}
		if f.hang {
			// Read the whole request first: only then does the server
			// see the client hang up (floe's request timeout) and end
			// req's context.
			_, _ = io.Copy(io.Discard, req.Body)
			select {
			case <-req.Context().Done():
			case <-p.done:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"injected by the e2e proxy","type":%q,"code":%d}}`, f.errType, f.status)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(p.done) }) // runs first: no handler holds Close up
	p.url = srv.URL
	return p
}

// arm makes the next n table commits meet f.
func (p *catalogProxy) arm(f catalogFault, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.left = f, n
}

// pending is how many armed faults were not served yet.
func (p *catalogProxy) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.left
}

// take reports whether req is a table commit that meets the armed fault,
// and counts it.
func (p *catalogProxy) take(req *http.Request) (catalogFault, bool) {
	if req.Method != http.MethodPost || !commitPath.MatchString(req.URL.Path) {
		return catalogFault{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left == 0 {
		return catalogFault{}, false
	}
	p.left--
	return p.fault, true
}
