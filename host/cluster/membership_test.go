package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
	"github.com/floehq/floe/host/kclient/kclienttest"
)

// joinAll starts n workers of one new cluster on the test broker.
func joinAll(t *testing.T, ctx context.Context, kc kclient.Config, group string, n int) []*Membership {
	t.Helper()
	var ms []*Membership
	for i := range n {
		m, err := Join(ctx, Config{Kafka: kc, GroupID: group, WorkerID: fmt.Sprintf("worker-%d", i),
			SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second, ReplicationFactor: -1})
		if err != nil {
			t.Fatalf("worker-%d joins: %v", i, err)
		}
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		ms = append(ms, m)
	}
	return ms
}

// waitOneLeader waits until exactly one of ms leads, and returns it.
func waitOneLeader(t *testing.T, ctx context.Context, ms []*Membership) *Membership {
	t.Helper()
	for {
		var leaders []*Membership
		for _, m := range ms {
			if m.Leader() {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no single leader among %d workers (%d lead)", len(ms), len(leaders))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func testKafka(t *testing.T) kclient.Config {
	t.Helper()
	b := kclienttest.Require(t)
	kc, err := kclient.FromWorker(b.Worker())
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// TestMembershipOneLeader joins three workers: exactly one leads, Members
// lists all three; the leader leaves and another takes over well inside
// the session timeout.
func TestMembershipOneLeader(t *testing.T) {
	kc := testKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	group := kclienttest.UniqueName("floe-cluster-test")
	ms := joinAll(t, ctx, kc, group, 3)
	leader := waitOneLeader(t, ctx, ms)

	var members []string
	for {
		var err error
		members, err = leader.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(members) == 3 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want := []string{"worker-0", "worker-1", "worker-2"}; !slices.Equal(members, want) {
		t.Fatalf("members %v, want %v", members, want)
	}

	began := time.Now()
	if err := leader.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rest := slices.DeleteFunc(slices.Clone(ms), func(m *Membership) bool { return m == leader })
	next := waitOneLeader(t, ctx, rest)
	took := time.Since(began)
	t.Logf("%s left; %s leads after %s", leader.WorkerID(), next.WorkerID(), took)
	if took > 6*time.Second {
		t.Errorf("a clean leave took %s to move the leadership, want well under the 6 s session timeout", took)
	}
}

// TestMembershipForeignGroup joins a worker to a group.id an ordinary
// consumer already uses: the error names the group and the member.
func TestMembershipForeignGroup(t *testing.T) {
	kc := testKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	group := kclienttest.UniqueName("floe-cluster-foreign")
	topic := kclienttest.UniqueName("floe-cluster-other")
	admin, err := kc.NewAdmin(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Client().CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": kc.Bootstrap(), "group.id": group, "client.id": "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		c.Poll(100)
		if a, _ := c.Assignment(); len(a) > 0 {
			break
		}
	}

	m, err := Join(ctx, Config{Kafka: kc, GroupID: group, WorkerID: "worker-0", SessionTimeout: 6 * time.Second, ReplicationFactor: -1})
	if err == nil {
		defer func() { _ = m.Close(context.Background()) }()
		for ctx.Err() == nil {
			if _, err = m.Members(ctx); err != nil {
				break
			}
			if err = m.Err(); err != nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	var fe *ForeignMembersError
	if !errors.As(err, &fe) {
		t.Fatalf("joining a group an ordinary consumer uses: %v, want a *ForeignMembersError", err)
	}
	t.Logf("%v", err)
}
