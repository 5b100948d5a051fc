package kafkastore

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
	"github.com/floehq/floe/host/store"
)

func connector(name string, target store.TargetState) store.Connector {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return store.Connector{Name: name, Config: map[string]string{"connector.class": "iceberg", "topics": name}, Target: target, Created: now, Updated: now}
}

// TestConfigsTwoWorkers: the leader's acknowledged writes are seen by
// another worker's ReadToEnd, by offset, and by a reader started later,
// which rebuilds the same state.
func TestConfigsTwoWorkers(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	a := c.configs(t, "worker-a")

	var mu sync.Mutex
	var seen []string
	opts := c.opts("worker-b")
	opts.OnApply = func(r Record) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s@%d deleted=%v", r.Key, r.Offset, r.Deleted()))
	}
	b, err := OpenConfigs(ctx, c.s, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// A follower cannot write.
	if err := b.PutConnector(ctx, connector("x", store.TargetRunning)); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("write without a claim: got %v, want ErrNotClaimed", err)
	}
	if _, ok := b.Leader(); ok {
		t.Fatal("a leader before any claim")
	}
	l, err := a.ClaimWrites(ctx, "http://a:8083")
	if err != nil {
		t.Fatal(err)
	}
	if l.Epoch != 1 || l.WorkerID != "worker-a" || a.Epoch() != 1 {
		t.Fatalf("claim: %+v, epoch %d", l, a.Epoch())
	}

	var offs []int64
	must := func(off int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(offs) > 0 && off <= offs[len(offs)-1] {
			t.Fatalf("offset %d after %d", off, offs[len(offs)-1])
		}
		if a.Offset() <= off {
			t.Fatalf("write returned before the reader applied it: offset %d, reader at %d", off, a.Offset())
		}
		offs = append(offs, off)
	}
	orders := connector("orders", store.TargetRunning)
	must(a.WriteConnector(ctx, orders))
	must(a.WriteConnector(ctx, connector("clicks", "")))
	must(a.WriteTargetState(ctx, "orders", store.TargetPaused))
	must(a.WriteRestart(ctx, "clicks", Restart{ID: "r1", IncludeTasks: true, OnlyFailed: true}))
	must(a.WriteAssignment(ctx, Assignment{Epoch: 3, ConfigOffset: offs[len(offs)-1], Data: json.RawMessage(`{"worker-a":["orders"]}`)}))

	// Another worker reading to the end sees every acknowledged write.
	got, err := b.Connectors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "clicks" || got[1].Name != "orders" {
		t.Fatalf("connectors = %+v", got)
	}
	if got[1].Target != store.TargetPaused || got[0].Target != store.TargetRunning || got[1].Config["topics"] != "orders" || !got[1].Created.Equal(orders.Created) {
		t.Fatalf("connectors = %+v", got)
	}
	snap := b.Snapshot()
	if snap.Offset <= offs[len(offs)-1] || snap.Leader == nil || snap.Leader.Epoch != 1 || snap.Leader.URL != "http://a:8083" ||
		snap.Assignment == nil || snap.Assignment.Epoch != 3 || string(snap.Assignment.Data) != `{"worker-a":["orders"]}` ||
		snap.Restarts["clicks"].ID != "r1" || !snap.Restarts["clicks"].IncludeTasks {
		t.Fatalf("snapshot at %d (last write at %d): %+v leader %+v assignment %+v", snap.Offset, offs[len(offs)-1], snap, snap.Leader, snap.Assignment)
	}

	// Tombstones: deletion and a handled restart.
	must(a.WriteRestartDone(ctx, "clicks"))
	must(a.WriteDeletion(ctx, "orders"))
	if err := b.WaitForOffset(ctx, offs[len(offs)-1]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Connector(ctx, "orders"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted connector: %v", err)
	}
	if snap := b.Snapshot(); len(snap.Restarts) != 0 || len(snap.Connectors) != 1 {
		t.Fatalf("after deletes: %+v", snap)
	}
	mu.Lock()
	t.Logf("worker b applied: %s", strings.Join(seen, ", "))
	if len(seen) == 0 || !strings.HasPrefix(seen[0], KeyLeader+"@") || !strings.Contains(seen[len(seen)-1], "deleted=true") {
		t.Errorf("OnApply saw %v", seen)
	}
	mu.Unlock()

	// A reader started now rebuilds the same state.
	fresh := c.configs(t, "worker-c")
	want, have := b.Snapshot(), fresh.Snapshot()
	if !reflect.DeepEqual(want, have) {
		t.Fatalf("restarted reader:\n got %+v\nwant %+v", have, want)
	}
}

// TestConfigsFencing: a second ClaimWrites fences the first writer; its
// next write fails with ErrFenced and is never visible.
func TestConfigsFencing(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	a, b := c.configs(t, "worker-a"), c.configs(t, "worker-b")
	if _, err := a.ClaimWrites(ctx, "http://a"); err != nil {
		t.Fatal(err)
	}
	if err := a.PutConnector(ctx, connector("before", store.TargetRunning)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lb, err := b.ClaimWrites(ctx, "http://b")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second claim took %s", time.Since(start))
	if lb.Epoch != 2 {
		t.Fatalf("second claim epoch %d", lb.Epoch)
	}
	err = a.PutConnector(ctx, connector("zombie", store.TargetRunning))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced leader's write: got %v, want ErrFenced", err)
	}
	t.Logf("fenced write: %v", err)
	if a.Epoch() != 0 {
		t.Errorf("fenced store still claims epoch %d", a.Epoch())
	}
	if err := a.PutConnector(ctx, connector("zombie2", store.TargetRunning)); !errors.Is(err, ErrNotClaimed) {
		t.Fatalf("write after fencing: got %v, want ErrNotClaimed", err)
	}
	if err := b.PutConnector(ctx, connector("after", store.TargetRunning)); err != nil {
		t.Fatal(err)
	}
	for _, cs := range []*Configs{a, b, c.configs(t, "worker-c")} {
		got, err := cs.Connectors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
		}
		if strings.Join(names, ",") != "after,before" {
			t.Fatalf("connectors = %v", names)
		}
		if l, _ := cs.Leader(); l.Epoch != 2 || l.WorkerID != "worker-b" {
			t.Fatalf("leader = %+v", l)
		}
	}
	// Nothing of the zombie is in the log either (aborted, never committed).
	for _, r := range readRaw(t, c, c.s.ConfigTopic.Name) {
		if strings.Contains(r.key, "zombie") {
			t.Fatalf("zombie record in the log: %s", r.key)
		}
	}
	// A leader fenced in the middle of a transaction (paused between
	// producing and committing): the claim aborts it.
	if _, err := a.ClaimWrites(ctx, "http://a"); err != nil {
		t.Fatal(err)
	}
	a.t.wmu.Lock()
	p := a.t.producer
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	msgs, err := a.t.encode([]Mutation{{Key: PrefixConnector + "midway", Value: connectorRecord{}, Epoch: a.Epoch()}})
	if err != nil {
		t.Fatal(err)
	}
	dc := make(chan kafka.Event, 1)
	if err := p.Produce(msgs[0], dc); err != nil {
		t.Fatal(err)
	}
	if m := (<-dc).(*kafka.Message); m.TopicPartition.Error != nil {
		t.Fatal(m.TopicPartition.Error)
	}
	if _, err := b.ClaimWrites(ctx, "http://b"); err != nil {
		t.Fatal(err)
	}
	err = p.CommitTransaction(ctx)
	a.t.wmu.Unlock()
	if err == nil {
		t.Fatal("a fenced producer committed")
	}
	if _, err := c.configs(t, "worker-e").Connector(ctx, "midway"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the fenced transaction is visible: %v", err)
	}

	// The fenced worker may claim again (it fences b in turn) and gets the
	// next epoch.
	if la, err := a.ClaimWrites(ctx, "http://a"); err != nil || la.Epoch != 5 {
		t.Fatalf("re-claim: %+v %v", la, err)
	}
	if err := b.PutConnector(ctx, connector("b-late", store.TargetRunning)); !errors.Is(err, ErrFenced) {
		t.Fatalf("b after a's re-claim: %v", err)
	}
}

// TestConfigsZombieEpochIgnored: a record written with a leader epoch
// below the newest floe-leader's, through a producer the claim did not
// fence, is ignored by every reader, and the leader's next write rewrites
// the key it shadowed.
func TestConfigsZombieEpochIgnored(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	a, b := c.configs(t, "worker-a"), c.configs(t, "worker-b")
	if _, err := a.ClaimWrites(ctx, "http://a"); err != nil {
		t.Fatal(err)
	}
	if err := a.PutConnector(ctx, connector("orders", store.TargetRunning)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ClaimWrites(ctx, "http://b"); err != nil {
		t.Fatal(err)
	}

	// The zombie: leader a at epoch 1, writing through another
	// transactional.id (an older floe, a hand-built producer).
	zombie, err := OpenTable(ctx, TableConfig{
		Client: c.s.Client, Topic: c.s.ConfigTopic.Name, TopicKey: KeyConfigTopic, GroupID: c.s.GroupID,
		TransactionalID: "zombie-" + c.s.GroupID, Admit: admitConfig,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	if err := zombie.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	bad := connector("orders", store.TargetStopped)
	bad.Config["topics"] = "zombie"
	_, err = zombie.Write(ctx,
		Mutation{Key: PrefixConnector + "orders", Value: connectorRecord{Config: bad.Config}, Epoch: 1},
		Mutation{Key: PrefixTargetState + "orders", Value: targetRecord{State: store.TargetStopped}, Epoch: 1},
		Mutation{Key: PrefixConnector + "ghost", Value: connectorRecord{Config: map[string]string{}}, Epoch: 1})
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), `"connector-ghost"`) {
		t.Fatalf("zombie write: got %v, want ErrRejected naming the keys", err)
	}
	for _, cs := range []*Configs{a, b, c.configs(t, "worker-c")} {
		got, err := cs.Connectors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Name != "orders" || got[0].Config["topics"] != "orders" || got[0].Target != store.TargetRunning {
			t.Fatalf("a zombie record was applied: %+v", got)
		}
	}
	if !strings.Contains(c.logs.String(), "ignored a config record of an old leader epoch") {
		t.Error("no warning about the ignored record")
	}

	// The leader's next write rewrites the shadowed keys with its epoch,
	// so compaction cannot leave the zombie's record as the newest.
	if _, err := b.WriteRestart(ctx, "orders", Restart{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	last := map[string]rawRecord{}
	for _, r := range readRaw(t, c, c.s.ConfigTopic.Name) {
		last[r.key] = r
	}
	for _, k := range []string{PrefixConnector + "orders", PrefixTargetState + "orders", PrefixConnector + "ghost"} {
		r := last[k]
		epoch := r.headers[headerEpoch]
		if r.value != nil {
			var env envelope
			if err := json.Unmarshal(r.value, &env); err != nil {
				t.Fatal(err)
			}
			epoch = strconv.FormatInt(env.Epoch, 10)
		}
		if epoch != "2" {
			t.Errorf("newest record of %s has epoch %s, want the leader's rewrite at 2 (%s)", k, epoch, r.value)
		}
	}
	if r := last[PrefixConnector+"ghost"]; r.value != nil {
		t.Errorf("ghost's rewrite is not a tombstone: %s", r.value)
	}
	if !strings.Contains(string(last[PrefixConnector+"orders"].value), `"topics":"orders"`) {
		t.Errorf("orders' rewrite lost the valid value: %s", last[PrefixConnector+"orders"].value)
	}
	// And a reader of the whole log still agrees.
	if got, _ := c.configs(t, "worker-d").Connectors(ctx); len(got) != 1 || got[0].Config["topics"] != "orders" {
		t.Fatalf("after repair: %+v", got)
	}
}

// TestConfigsOtherCluster: two clusters pointed at one config topic.
func TestConfigsOtherCluster(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	mine := c.configs(t, "worker-a")

	otherRaw := map[string]string{}
	for k, v := range c.raw {
		otherRaw[k] = v
	}
	otherRaw["group.id"] = c.s.GroupID + "-other"
	other := withRaw(t, c.b, otherRaw)
	oc := other.configs(t, "other-a")
	if _, err := oc.ClaimWrites(ctx, "http://other"); err != nil {
		t.Fatal(err)
	}

	check := func(err error) {
		t.Helper()
		if !errors.Is(err, ErrOtherCluster) {
			t.Fatalf("got %v, want ErrOtherCluster", err)
		}
		for _, w := range []string{c.s.ConfigTopic.Name, otherRaw["group.id"], `"` + c.s.GroupID + `"`, "config.storage.topic"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
	}
	// A running worker stops reading at the other cluster's record…
	_, err := mine.Connectors(ctx)
	check(err)
	if err := mine.ReadToEnd(ctx); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("sticky: %v", err)
	}
	// … and a starting one does not start.
	_, err = OpenConfigs(ctx, c.s, c.opts("worker-b"))
	check(err)
	t.Logf("other cluster: %v", err)
}

// TestConfigsBadTopics: a multi-partition or non-compacted config topic,
// and a record floe did not write.
func TestConfigsBadTopics(t *testing.T) {
	ctx := testCtx(t)
	c := newCluster(t)
	admin, err := c.s.Client.NewAdmin(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	create := func(name string, parts int, policy string) {
		t.Helper()
		res, err := admin.Client().CreateTopics(ctx, []kafka.TopicSpecification{{Topic: name, NumPartitions: parts, ReplicationFactor: 1,
			Config: map[string]string{"cleanup.policy": policy}}})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("create %s: %v %v", name, err, res)
		}
	}
	create(c.s.ConfigTopic.Name, 3, "compact")
	_, err = OpenConfigs(ctx, c.s, c.opts("w"))
	if !errors.Is(err, kclient.ErrBadTopic) || !strings.Contains(err.Error(), c.s.ConfigTopic.Name) || !strings.Contains(err.Error(), "3 partitions") ||
		!strings.Contains(err.Error(), "set config.storage.topic to a new topic name") {
		t.Fatalf("3-partition config topic: %v", err)
	}
	c2 := newCluster(t)
	create(c2.s.ConfigTopic.Name, 1, "delete")
	_, err = OpenConfigs(ctx, c2.s, c2.opts("w"))
	if !errors.Is(err, kclient.ErrBadTopic) || !strings.Contains(err.Error(), c2.s.ConfigTopic.Name) || !strings.Contains(err.Error(), "cleanup.policy=delete") ||
		!strings.Contains(err.Error(), "--entity-name "+c2.s.ConfigTopic.Name+" --add-config cleanup.policy=compact") {
		t.Fatalf("non-compacted config topic: %v", err)
	}
	t.Logf("non-compacted config topic: %v", err)
	create(c.s.StatusTopic.Name, 5, "delete")
	_, err = OpenStatuses(ctx, c.s, c.opts("w"))
	if !errors.Is(err, kclient.ErrBadTopic) || !strings.Contains(err.Error(), "cleanup.policy=delete") || !strings.Contains(err.Error(), "--add-config cleanup.policy=compact") {
		t.Fatalf("non-compacted status topic: %v", err)
	}

	// A record someone else wrote into the offsets topic.
	o := c.offsets(t, "w")
	produceRaw(t, c, c.s.OffsetTopic.Name, []byte("committed-x"), []byte("not json"))
	if _, err := o.Committed(ctx, "x"); err == nil || !strings.Contains(err.Error(), "floe did not write") || !strings.Contains(err.Error(), `"committed-x"`) {
		t.Fatalf("foreign record: %v", err)
	}
}
