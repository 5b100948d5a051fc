package control

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/kclient"
	"github.com/floehq/floe/host/kclient/kclienttest"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/sdk"
)

func open(t *testing.T, b kclienttest.Broker, group, topic, worker string) *Transport {
	t.Helper()
	client, err := kclient.FromWorker(b.Worker())
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseSettings(map[string]string{KeyTopic: topic, KeyReplicationFactor: "1"}, client, group)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr, err := Open(ctx, set, worker, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func openLink(t *testing.T, tr *Transport, connector string) runtime.ControlLink {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := tr.Link(ctx, connector)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// pump receives l's messages on its own goroutine, as the runtime's
// dispatcher does (a message counts as handled once Receive is called
// again), until the test ends.
func pump(t *testing.T, l runtime.ControlLink) <-chan runtime.ControlMessage {
	ch := make(chan runtime.ControlMessage, 16)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for {
			m, err := l.Receive(ctx)
			if err != nil {
				return
			}
			ch <- m
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan runtime.ControlMessage) runtime.ControlMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message within 30 s")
		return runtime.ControlMessage{}
	}
}

// Two workers' links of one connector exchange checkpoints and answers
// through a real broker, in order, each receiving its own messages too;
// another connector's messages and another cluster's never show; Sync
// returns once what was published before it was received and handled.
func TestLinksCarryOneConnectorsMessages(t *testing.T) {
	b := kclienttest.Require(t)
	group := kclienttest.UniqueName("floe-control-test")
	topic := group + "-control"
	a := open(t, b, group, topic, "worker-a")
	c := open(t, b, group, topic, "worker-c")
	other := open(t, b, kclienttest.UniqueName("other-cluster"), topic, "worker-x")

	la, lc := openLink(t, a, "orders"), openLink(t, c, "orders")
	lx := openLink(t, other, "orders") // another cluster on the same topic
	lb := openLink(t, a, "billing")    // another connector
	ma, mc, mx, mb := pump(t, la), pump(t, lc), pump(t, lx), pump(t, lb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	flushed := runtime.FlushedCheckpoint{
		Ref:     runtime.CheckpointRef{Worker: "worker-c", Session: "s1", Checkpoint: 3},
		Ranges:  []sdk.Range{{Partition: "orders/0", From: 10, Next: 20}},
		Results: []sdk.WriteResult{{Payload: []byte{0, 1, 2, 255}, Writer: 1, Records: 10, Checkpoint: 3}},
		Records: 10,
	}
	if err := lx.Publish(ctx, runtime.ControlMessage{Flushed: &runtime.FlushedCheckpoint{Ref: runtime.CheckpointRef{Worker: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if err := lb.Publish(ctx, runtime.ControlMessage{Flushed: &runtime.FlushedCheckpoint{Ref: runtime.CheckpointRef{Worker: "billing"}}}); err != nil {
		t.Fatal(err)
	}
	if err := lc.Publish(ctx, runtime.ControlMessage{Flushed: &flushed}); err != nil {
		t.Fatal(err)
	}
	answer := runtime.CommitAnswer{Committer: "worker-a", Epoch: 4, Commit: 9, Frontier: map[string]int64{"orders/0": 20},
		Covered: []runtime.CheckpointRef{flushed.Ref}}
	if err := la.Publish(ctx, runtime.ControlMessage{Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan runtime.ControlMessage{"a": ma, "c": mc} {
		m := next(t, ch)
		if m.Flushed == nil || m.Flushed.Ref != flushed.Ref || string(m.Flushed.Results[0].Payload) != string(flushed.Results[0].Payload) ||
			m.Flushed.Results[0].Checkpoint != 3 || m.Flushed.Ranges[0] != flushed.Ranges[0] {
			t.Fatalf("link %s: first message %+v; want the flushed checkpoint as published", name, m)
		}
		m = next(t, ch)
		if m.Answer == nil || m.Answer.Commit != 9 || m.Answer.Frontier["orders/0"] != 20 || m.Answer.Covered[0] != flushed.Ref {
			t.Fatalf("link %s: second message %+v; want the answer", name, m)
		}
	}
	// The other cluster's link sees only its own message; the other
	// connector's link only its own.
	if m := next(t, mx); m.Flushed == nil || m.Flushed.Ref.Worker != "x" {
		t.Fatalf("the other cluster's link got %+v", m)
	}
	if m := next(t, mb); m.Flushed == nil || m.Flushed.Ref.Worker != "billing" {
		t.Fatalf("the other connector's link got %+v", m)
	}
	select {
	case m := <-ma:
		t.Fatalf("link a got a third message %+v", m)
	case m := <-mx:
		t.Fatalf("the other cluster's link got a second message %+v", m)
	case <-time.After(500 * time.Millisecond):
	}

	// Sync returns once what was published before it was handed out and
	// handled; a link nobody receives from is never in sync.
	if err := lc.Publish(ctx, runtime.ControlMessage{Answer: &runtime.CommitAnswer{Committer: "worker-a", Commit: 10}}); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := la.Sync(sctx); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ma); m.Answer == nil || m.Answer.Commit != 10 {
		t.Fatalf("got %+v, want commit 10's answer", m)
	}
	idle := openLink(t, c, "orders")
	if err := lc.Publish(ctx, runtime.ControlMessage{Answer: &runtime.CommitAnswer{Committer: "worker-a", Commit: 11}}); err != nil {
		t.Fatal(err)
	}
	short, sc := context.WithTimeout(ctx, time.Second)
	defer sc()
	if err := idle.Sync(short); err == nil {
		t.Fatal("Sync of a link nobody receives from returned")
	}
}

// A control topic that exists with cleanup.policy=compact is refused
// with an error naming the topic and the fix: compaction would drop
// messages.
func TestCompactedControlTopicRefused(t *testing.T) {
	b := kclienttest.Require(t)
	topic := kclienttest.UniqueName("floe-control-compacted")
	client, err := kclient.FromWorker(b.Worker())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.NewAdmin(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.EnsureTopic(ctx, kclient.TopicSpec{Name: topic, Key: "test", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	set, err := ParseSettings(map[string]string{KeyTopic: topic, KeyReplicationFactor: "1"}, client, "g")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, set, "w", nil)
	if !errors.Is(err, kclient.ErrBadTopic) || !strings.Contains(err.Error(), topic) || !strings.Contains(err.Error(), "cleanup.policy=delete") {
		t.Fatalf("Open on a compacted control topic: %v; want ErrBadTopic naming %s and cleanup.policy=delete", err, topic)
	}
}

func TestParseSettings(t *testing.T) {
	client, err := kclient.FromWorker(map[string]string{"bootstrap.servers": "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSettings(map[string]string{}, client, "cluster")
	if err != nil || s.Topic.Name != "cluster-floe-control" || s.Topic.Partitions != DefaultPartitions || s.Topic.CleanupPolicy != "delete" {
		t.Fatalf("defaults: %+v, %v", s.Topic, err)
	}
	if _, err := ParseSettings(map[string]string{KeyPartitions: "0"}, client, "cluster"); err == nil || !strings.Contains(err.Error(), KeyPartitions) {
		t.Fatalf("partitions 0: %v; want an error naming %s", err, KeyPartitions)
	}
}
