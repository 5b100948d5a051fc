package kafkastore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/store"
)

// TestStatusesGenerationRule: a stale generation of another worker never
// overwrites a newer one; the same worker may; a restarted reader agrees.
func TestStatusesGenerationRule(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	w1, w2 := c.statuses(t, "w1"), c.statuses(t, "w2")

	put := func(s *Statuses, worker string, gen int64, state string) error {
		return s.PutTaskStatus(ctx, "orders", TaskStatus{ID: 0, State: state, WorkerID: worker, Generation: gen})
	}
	task0 := func(s *Statuses) TaskStatus {
		t.Helper()
		_, tasks, ok, err := s.ConnectorStatus(ctx, "orders")
		if err != nil || !ok || len(tasks) != 1 {
			t.Fatalf("status: %v %v %+v", ok, err, tasks)
		}
		return tasks[0]
	}
	if err := put(w1, "w1", 5, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	// Another worker, older generation: ignored by every reader.
	err := put(w2, "w2", 4, "FAILED")
	if !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("stale write: got %v, want ErrStaleGeneration", err)
	}
	for _, s := range []*Statuses{w1, w2} {
		if got := task0(s); got.WorkerID != "w1" || got.Generation != 5 || got.State != "RUNNING" {
			t.Fatalf("after a stale write: %+v", got)
		}
	}
	// The same worker may go back (its own record).
	if err := put(w1, "w1", 3, "PAUSED"); err != nil {
		t.Fatal(err)
	}
	// Another worker at an equal generation wins.
	if err := put(w2, "w2", 3, "UNASSIGNED"); err != nil {
		t.Fatal(err)
	}
	if got := task0(w1); got.WorkerID != "w2" || got.State != "UNASSIGNED" {
		t.Fatalf("equal generation: %+v", got)
	}
	// A newer generation from the first worker wins again.
	if err := put(w1, "w1", 6, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	if err := put(w2, "w2", 5, "FAILED"); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("stale write: %v", err)
	}
	// The connector record follows the same rule.
	if err := w1.PutConnectorStatus(ctx, "orders", ConnectorStatus{State: "RUNNING", WorkerID: "w1", Generation: 6}); err != nil {
		t.Fatal(err)
	}
	if err := w2.PutConnectorStatus(ctx, "orders", ConnectorStatus{State: "FAILED", WorkerID: "w2", Generation: 2}); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("stale connector write: %v", err)
	}
	// A reader started now rebuilds the same state from the log.
	fresh := c.statuses(t, "w3")
	if got := task0(fresh); got.WorkerID != "w1" || got.Generation != 6 {
		t.Fatalf("restarted reader: %+v", got)
	}
	cs, _, _, _ := fresh.ConnectorStatus(ctx, "orders")
	if cs.WorkerID != "w1" || cs.State != "RUNNING" {
		t.Fatalf("restarted reader, connector: %+v", cs)
	}
}

// TestStatusesStoreInterface: PutStatus (the whole connector), topics,
// worker records and deletes, across two workers.
func TestStatusesStoreInterface(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	a, b := c.statuses(t, "w1"), c.statuses(t, "w2")
	if _, err := b.Status(ctx, "orders"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing status: %v", err)
	}
	a.SetGeneration(7)
	st := store.Status{
		Connector: store.InstanceStatus{State: "RUNNING", WorkerID: "w1"},
		Tasks:     []store.InstanceStatus{{State: "RUNNING", WorkerID: "w1"}, {State: "FAILED", WorkerID: "w1", Trace: "boom"}, {State: "RUNNING", WorkerID: "w1"}},
		Updated:   time.Now().UTC().Truncate(time.Millisecond),
	}
	if err := a.PutStatus(ctx, "orders", st); err != nil {
		t.Fatal(err)
	}
	// Connector "orders-2" shares the key prefix and must stay apart.
	if err := a.PutStatus(ctx, "orders-2", store.Status{Connector: store.InstanceStatus{State: "PAUSED"}, Tasks: []store.InstanceStatus{{State: "PAUSED"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Status(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("status:\n got %+v\nwant %+v", got, st)
	}
	_, tasks, _, _ := b.ConnectorStatus(ctx, "orders")
	if len(tasks) != 3 || tasks[1].Generation != 7 || tasks[1].ID != 1 {
		t.Fatalf("tasks: %+v", tasks)
	}
	// Fewer tasks: the records past the last go.
	st.Tasks = st.Tasks[:1]
	if err := a.PutStatus(ctx, "orders", st); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Status(ctx, "orders"); len(got.Tasks) != 1 {
		t.Fatalf("after shrinking: %+v", got.Tasks)
	}
	// A gap in the task ids shows as UNASSIGNED.
	if err := b.PutTaskStatus(ctx, "orders", TaskStatus{ID: 2, State: "RUNNING", WorkerID: "w2", Generation: 7}); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Status(ctx, "orders"); len(got.Tasks) != 3 || got.Tasks[1].State != "UNASSIGNED" || got.Tasks[2].WorkerID != "w2" {
		t.Fatalf("with a gap: %+v", got.Tasks)
	}

	if tp, err := b.Topics(ctx, "orders"); err != nil || len(tp) != 0 {
		t.Fatalf("topics before: %v %v", tp, err)
	}
	if err := a.PutTopics(ctx, "orders", []string{"b", "a", "b"}); err != nil {
		t.Fatal(err)
	}
	if tp, _ := b.Topics(ctx, "orders"); strings.Join(tp, ",") != "a,b" {
		t.Fatalf("topics = %v", tp)
	}

	started := time.Now().UTC().Truncate(time.Millisecond)
	w1 := WorkerInfo{ID: "w1", URL: "http://w1:8083", Version: "v1.2.3", Commit: "abc123", Started: started,
		Plugins: []Plugin{{Name: "iceberg", Kind: "sink", Version: "1"}}}
	if err := a.PutWorker(ctx, w1); err != nil {
		t.Fatal(err)
	}
	if err := b.PutWorker(ctx, WorkerInfo{ID: "w2", URL: "http://w2:8083", Started: started}); err != nil {
		t.Fatal(err)
	}
	ws, err := b.Workers(ctx)
	if err != nil || len(ws) != 2 || !reflect.DeepEqual(ws[0], w1) || ws[1].ID != "w2" {
		t.Fatalf("workers = %+v %v", ws, err)
	}
	// Clean exit.
	if err := b.DeleteWorker(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	if ws, _ := a.Workers(ctx); len(ws) != 1 || ws[0].ID != "w1" {
		t.Fatalf("after delete: %+v", ws)
	}

	if err := b.DeleteStatus(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Status(ctx, "orders"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after DeleteStatus: %v", err)
	}
	if tp, _ := a.Topics(ctx, "orders"); len(tp) != 0 {
		t.Fatalf("topics after delete: %v", tp)
	}
	if got, err := a.Status(ctx, "orders-2"); err != nil || got.Connector.State != "PAUSED" || len(got.Tasks) != 1 {
		t.Fatalf("other connector: %+v %v", got, err)
	}
	// Partitions: the default is Connect's 5.
	if n := len(a.Table().Partitions()); n != DefaultStatusPartitions {
		t.Errorf("status topic has %d partitions", n)
	}
}
