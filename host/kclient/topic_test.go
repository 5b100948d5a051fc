package kclient

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient/kclienttest"
)

// syncBuffer is a log sink tests read while clients still write to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testAdmin(t *testing.T, raw map[string]string) (*Admin, *syncBuffer) {
	t.Helper()
	c, err := FromWorker(raw)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	a, err := c.NewAdmin(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, logs
}

func describe(t *testing.T, a *Admin, topic string) (partitions, rf int, policy string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Client().DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{topic}))
	if err != nil || len(res.TopicDescriptions) != 1 || res.TopicDescriptions[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("describe %s: %v %+v", topic, err, res)
	}
	d := res.TopicDescriptions[0]
	cr, err := a.Client().DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		t.Fatal(err)
	}
	return len(d.Partitions), len(d.Partitions[0].Replicas), cr[0].Config["cleanup.policy"].Value
}

func TestEnsureTopicCreatesCompacted(t *testing.T) {
	b := kclienttest.Require(t)
	a, logs := testAdmin(t, b.Worker())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Status-like topic: 5 partitions, replication factor 3 capped.
	name := kclienttest.UniqueName("floe-kclient-status")
	spec := TopicSpec{Name: name, Key: "status.storage.topic", Partitions: 5, ReplicationFactor: b.Brokers + 2}
	topic, err := a.EnsureTopic(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !topic.Created || topic.Partitions != 5 {
		t.Fatalf("got %+v", topic)
	}
	parts, rf, policy := describe(t, a, name)
	if parts != 5 || rf != b.Brokers || policy != "compact" {
		t.Fatalf("created %d partitions, rf %d, cleanup.policy %q", parts, rf, policy)
	}
	if l := logs.String(); !strings.Contains(l, "replication factor capped at the broker count") || !strings.Contains(l, name) {
		t.Errorf("no cap warning in the logs:\n%s", l)
	}
	// Again: found, validated, not created.
	topic, err = a.EnsureTopic(ctx, spec)
	if err != nil || topic.Created || topic.Partitions != 5 {
		t.Fatalf("second call: %+v %v", topic, err)
	}

	// Config-like topic with broker defaults for the replication factor.
	cfgName := kclienttest.UniqueName("floe-kclient-config")
	topic, err = a.EnsureTopic(ctx, TopicSpec{Name: cfgName, Key: "config.storage.topic", ReplicationFactor: -1, SinglePartition: true,
		Configs: map[string]string{"min.compaction.lag.ms": "1000"}})
	if err != nil || !topic.Created || topic.Partitions != 1 {
		t.Fatalf("config topic: %+v %v", topic, err)
	}
	if parts, _, policy := describe(t, a, cfgName); parts != 1 || policy != "compact" {
		t.Fatalf("config topic: %d partitions, %q", parts, policy)
	}
}

func TestEnsureTopicRejectsBadTopics(t *testing.T) {
	b := kclienttest.Require(t)
	a, _ := testAdmin(t, b.Worker())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(name string, parts int, cfg map[string]string) {
		t.Helper()
		res, err := a.Client().CreateTopics(ctx, []kafka.TopicSpecification{{Topic: name, NumPartitions: parts, ReplicationFactor: 1, Config: cfg}})
		if err != nil || res[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("create %s: %v %v", name, err, res)
		}
	}

	deleted := kclienttest.UniqueName("floe-kclient-delete")
	create(deleted, 1, nil)
	_, err := a.EnsureTopic(ctx, TopicSpec{Name: deleted, Key: "offset.storage.topic", Partitions: 25, ReplicationFactor: 1})
	if !errors.Is(err, ErrBadTopic) {
		t.Fatalf("delete policy: got %v, want ErrBadTopic", err)
	}
	for _, w := range []string{deleted, "offset.storage.topic", "cleanup.policy=delete",
		"kafka-configs --bootstrap-server " + b.Bootstrap + " --alter --entity-type topics --entity-name " + deleted + " --add-config cleanup.policy=compact",
		"another topic name"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}

	both := kclienttest.UniqueName("floe-kclient-both")
	create(both, 1, map[string]string{"cleanup.policy": "compact,delete"})
	_, err = a.EnsureTopic(ctx, TopicSpec{Name: both, Key: "status.storage.topic", Partitions: 5, ReplicationFactor: 1})
	if !errors.Is(err, ErrBadTopic) || !strings.Contains(err.Error(), "cleanup.policy=compact,delete") {
		t.Fatalf("compact,delete: got %v", err)
	}

	multi := kclienttest.UniqueName("floe-kclient-multi")
	create(multi, 3, map[string]string{"cleanup.policy": "compact"})
	_, err = a.EnsureTopic(ctx, TopicSpec{Name: multi, Key: "config.storage.topic", ReplicationFactor: 1, SinglePartition: true})
	if !errors.Is(err, ErrBadTopic) {
		t.Fatalf("3-partition config topic: got %v, want ErrBadTopic", err)
	}
	for _, w := range []string{multi, "config.storage.topic", "3 partitions", "exactly one", "set config.storage.topic to a new topic name"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	// The same topic is fine where several partitions are allowed.
	if topic, err := a.EnsureTopic(ctx, TopicSpec{Name: multi, Key: "status.storage.topic", Partitions: 5, ReplicationFactor: 1}); err != nil || topic.Partitions != 3 {
		t.Fatalf("multi-partition status topic: %+v %v", topic, err)
	}

	if _, err := a.EnsureTopic(ctx, TopicSpec{Name: "x", Key: "status.storage.topic", Partitions: 0, ReplicationFactor: 1}); err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Errorf("0 partitions: %v", err)
	}
}

// TestSASL connects through the SASL listener with the worker's sasl.*
// keys, and checks that a wrong password fails with an error that says
// why without showing it.
func TestSASL(t *testing.T) {
	b := kclienttest.RequireSASL(t)
	worker := map[string]string{
		"bootstrap.servers": b.SASLBootstrap, "security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": b.SASLUser, "sasl.password": b.SASLPassword,
	}
	a, _ := testAdmin(t, worker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := kclienttest.UniqueName("floe-kclient-sasl")
	if topic, err := a.EnsureTopic(ctx, TopicSpec{Name: name, Key: "status.storage.topic", Partitions: 2, ReplicationFactor: 1}); err != nil || !topic.Created {
		t.Fatalf("over SASL: %+v %v", topic, err)
	}

	const wrong = "not-the-password-7f3a"
	worker["sasl.password"] = wrong
	bad, logs := testAdmin(t, worker)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	start := time.Now()
	_, err := bad.EnsureTopic(ctx2, TopicSpec{Name: name, Key: "status.storage.topic", Partitions: 2, ReplicationFactor: 1})
	if err == nil {
		t.Fatal("wrong password accepted")
	}
	// A failed authentication ends the call, not its deadline.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("wrong password took %s to fail", d)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(logs.String(), wrong) {
		t.Fatalf("the password shows:\nerror: %v\nlogs:\n%s", err, logs)
	}
	if !strings.Contains(strings.ToLower(err.Error()), "authentication") || !strings.Contains(err.Error(), "sasl.*") {
		t.Errorf("error does not say why: %v", err)
	}
	t.Logf("wrong password: %v", err)
}
