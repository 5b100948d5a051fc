package rest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/floehq/floe/host/worker"
)

// restartWorker is one worker of a cluster whose fake runs connector c
// with tasks on w1, w2 and w3, task 2 FAILED.
func restartWorker(t *testing.T, router Router) (*fakeWorker, *httptest.Server) {
	t.Helper()
	fw := newFakeWorker()
	fw.connectors["c"] = &fakeConnector{config: map[string]string{"connector.class": "iceberg"}, state: worker.StateRunning, tasks: []worker.TaskState{
		{ID: 0, State: worker.StateRunning, WorkerID: "w1"},
		{ID: 1, State: worker.StateRunning, WorkerID: "w2"},
		{ID: 2, State: worker.StateFailed, WorkerID: "w3"},
	}}
	srv := httptest.NewServer(New(Options{Worker: fw, Router: router}))
	t.Cleanup(srv.Close)
	return fw, srv
}

func post(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Post(u, "application/json", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func taskRestarts(fw *fakeWorker) []string {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(fw.calls), func(c string) bool { return !strings.HasPrefix(c, "restart-task") })
}

// A connector restart with includeTasks restarts the tasks on the other
// workers too (all, or the FAILED ones with onlyFailed), each on its own
// worker; a worker that is gone is named in a 500.
func TestRestartIncludeTasksReachesEveryWorker(t *testing.T) {
	w2, s2 := restartWorker(t, peerRouter{id: "w2"})
	w3, s3 := restartWorker(t, peerRouter{id: "w3"})
	_, s1 := restartWorker(t, peerRouter{id: "w1", peers: map[string]string{"w2": s2.URL, "w3": s3.URL}})

	if code := post(t, s1.URL+"/connectors/c/restart?includeTasks=true&onlyFailed=true"); code != http.StatusAccepted {
		t.Fatalf("restart onlyFailed: %d, want 202", code)
	}
	if got := taskRestarts(w2); len(got) != 0 {
		t.Errorf("w2 (task 1 RUNNING) restarted %v with onlyFailed", got)
	}
	if got := taskRestarts(w3); !slices.Equal(got, []string{"restart-task c 2"}) {
		t.Errorf("w3 (task 2 FAILED) got %v, want restart-task c 2", got)
	}

	if code := post(t, s1.URL+"/connectors/c/restart?includeTasks=true"); code != http.StatusAccepted {
		t.Fatalf("restart includeTasks: %d, want 202", code)
	}
	if got := taskRestarts(w2); !slices.Equal(got, []string{"restart-task c 1"}) {
		t.Errorf("w2 got %v, want restart-task c 1", got)
	}
	if got := taskRestarts(w3); len(got) != 2 {
		t.Errorf("w3 got %v, want a second restart of task 2", got)
	}

	// Without includeTasks only this worker's share restarts.
	if code := post(t, s1.URL+"/connectors/c/restart"); code != http.StatusNoContent {
		t.Fatalf("restart: %d, want 204", code)
	}
	if got := taskRestarts(w2); len(got) != 1 {
		t.Errorf("a plain restart reached w2: %v", got)
	}

	// w3 gone: the answer names it.
	_, lone := restartWorker(t, peerRouter{id: "w1", peers: map[string]string{"w2": s2.URL}})
	resp, err := http.Post(lone.URL+"/connectors/c/restart?includeTasks=true", "application/json", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body strings.Builder
	_, _ = io.Copy(&body, resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body.String(), "task 2: its worker w3 is not a live member") {
		t.Errorf("with w3 gone: %d %s, want 500 naming task 2 and w3", resp.StatusCode, body.String())
	}
}
