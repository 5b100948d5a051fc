package rest

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// peerRouter is a cluster of fixed peers; every request is answered here.
type peerRouter struct {
	id    string
	peers map[string]string
}

func (p peerRouter) Route(*http.Request) (string, error) { return "", nil }
func (p peerRouter) WorkerID() string                    { return p.id }
func (p peerRouter) Peers(_ context.Context) (map[string]string, error) {
	return p.peers, nil
}

// plainRouter cannot list peers.
type plainRouter struct{}

func (plainRouter) Route(*http.Request) (string, error) { return "", nil }
func (plainRouter) WorkerID() string                    { return "w1" }

// clusterWorker is one worker's REST API over its own loggers.
type clusterWorker struct {
	loggers *Loggers
	srv     *httptest.Server
}

func newClusterWorker(t *testing.T, auth *Auth, router Router) *clusterWorker {
	t.Helper()
	cw := &clusterWorker{loggers: NewLoggers(slog.DiscardHandler, slog.LevelInfo)}
	cw.loggers.Logger("floe.worker")
	cw.loggers.Logger("floe.rest")
	cw.srv = httptest.NewServer(New(Options{Worker: newFakeWorker(), Loggers: cw.loggers, Auth: auth, Router: router}))
	t.Cleanup(cw.srv.Close)
	return cw
}

func (cw *clusterWorker) level(name string) string {
	l, _ := cw.loggers.Level(name)
	return l.Level
}

func putLevel(t *testing.T, base, path, level string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", base+path, strings.NewReader(`{"level": "`+level+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// In a cluster, scope=cluster reaches every worker (with the caller's
// credentials), scope=worker only the one asked, and a worker that
// cannot be reached is named in the error.
func TestLoggerScopeClusterReachesEveryWorker(t *testing.T) {
	auth := &Auth{Users: map[string][32]byte{"admin": sha256.Sum256([]byte("s3cret"))}}
	w2 := newClusterWorker(t, auth, peerRouter{id: "w2"})
	w3 := newClusterWorker(t, auth, peerRouter{id: "w3"})
	w1 := newClusterWorker(t, auth, peerRouter{id: "w1", peers: map[string]string{"w2": w2.srv.URL, "w3": w3.srv.URL}})

	if code, body := putLevel(t, w1.srv.URL, "/admin/loggers/floe.worker?scope=cluster", "DEBUG"); code != http.StatusNoContent {
		t.Fatalf("scope=cluster: %d %s, want 204", code, body)
	}
	for name, w := range map[string]*clusterWorker{"w1": w1, "w2": w2, "w3": w3} {
		if got := w.level("floe.worker"); got != "DEBUG" {
			t.Errorf("after scope=cluster on w1, %s has floe.worker at %s, want DEBUG", name, got)
		}
	}

	if code, body := putLevel(t, w1.srv.URL, "/admin/loggers/floe.worker?scope=worker", "WARN"); code != http.StatusOK {
		t.Fatalf("scope=worker: %d %s", code, body)
	}
	if w1.level("floe.worker") != "WARN" || w2.level("floe.worker") != "DEBUG" || w3.level("floe.worker") != "DEBUG" {
		t.Errorf("scope=worker changed other workers: w1 %s, w2 %s, w3 %s", w1.level("floe.worker"), w2.level("floe.worker"), w3.level("floe.worker"))
	}

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	w4 := newClusterWorker(t, auth, peerRouter{id: "w4", peers: map[string]string{"w2": w2.srv.URL, "dead": gone.URL}})
	code, body := putLevel(t, w4.srv.URL, "/admin/loggers/floe.rest?scope=cluster", "ERROR")
	if code != http.StatusInternalServerError || !strings.Contains(body, "dead") || !strings.Contains(body, "not on") {
		t.Errorf("scope=cluster with a worker down: %d %s, want 500 naming it", code, body)
	}
	if w2.level("floe.rest") != "ERROR" {
		t.Errorf("the reachable worker did not get the level: %s", w2.level("floe.rest"))
	}
}

// A router that cannot list the workers refuses scope=cluster plainly
// instead of setting the level on one worker only.
func TestLoggerScopeClusterUnsupported(t *testing.T) {
	w := newClusterWorker(t, nil, plainRouter{})
	code, body := putLevel(t, w.srv.URL, "/admin/loggers/floe.worker?scope=cluster", "DEBUG")
	if code != http.StatusNotImplemented || !strings.Contains(body, "scope=worker") {
		t.Errorf("scope=cluster without peers: %d %s, want 501", code, body)
	}
	if got := w.level("floe.worker"); got != "INFO" {
		t.Errorf("level changed to %s although the request was refused", got)
	}
}
