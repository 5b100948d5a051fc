package kclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Admin is an admin client for the worker's cluster. Methods are safe for
// concurrent use; Close it when done.
type Admin struct {
	cfg    Config
	p      *kafka.Producer
	admin  *kafka.AdminClient
	logger *slog.Logger
	errs   ErrorLog
	done   chan struct{}
	// fatal is closed on the first error retrying cannot cure (a failed
	// authentication), so calls waiting for an answer end at once.
	fatal chan struct{}
}

// NewAdmin builds an admin client. It does not connect yet; the first call
// does. logger receives librdkafka's logs and the topic warnings (nil
// discards them).
func (c Config) NewAdmin(logger *slog.Logger) (*Admin, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// An admin client of its own cannot forward librdkafka's logs; one
	// derived from a producer shares the producer's log channel.
	p, err := c.NewProducer(logger, kafka.ConfigMap{"go.delivery.reports": false})
	if err != nil {
		return nil, err
	}
	admin, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("kafka admin client: %w", c.RedactError(err))
	}
	a := &Admin{cfg: c, p: p, admin: admin, logger: logger, done: make(chan struct{}), fatal: make(chan struct{})}
	go func() {
		defer close(a.done)
		closed := false
		for ev := range p.Events() {
			if e, ok := ev.(kafka.Error); ok {
				a.errs.Note(e)
				if !closed && a.errs.Fatal() != nil {
					close(a.fatal)
					closed = true
				}
			}
		}
	}()
	return a, nil
}

// bound returns ctx cancelled also when the client hits an error retrying
// cannot cure: a wrong password fails the call in a second, not at its
// deadline.
func (a *Admin) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.fatal:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Client returns the underlying admin client, for calls this type does not
// wrap. It is closed by Close.
func (a *Admin) Client() *kafka.AdminClient { return a.admin }

// Close closes the client.
func (a *Admin) Close() {
	a.admin.Close()
	a.p.Close()
	<-a.done
}

// Brokers returns the number of brokers in the cluster; ctx bounds the
// call.
func (a *Admin) Brokers(ctx context.Context) (int, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	res, err := a.admin.DescribeCluster(ctx)
	if err != nil {
		return 0, a.fail("describe the cluster", err)
	}
	return len(res.Nodes), nil
}

// fail builds an error for a call that did not get an answer: it ends with
// the client's last errors, which say why (redacted), and a next step.
func (a *Admin) fail(what string, err error) error {
	err = fmt.Errorf("kafka at %s: %s: %w", a.cfg.bootstrap, what, a.cfg.RedactError(err))
	if f := a.errs.Fatal(); f != nil {
		return fmt.Errorf("%w (client: %s; %s)", err, a.cfg.Redact(f.Error()), checkSettings)
	}
	if r := a.errs.Recent(); r != "" {
		return fmt.Errorf("%w (client: %s; %s)", err, a.cfg.Redact(r), checkSettings)
	}
	return err
}

// TopicSpec describes one of the worker's internal topics.
type TopicSpec struct {
	// Name is the topic.
	Name string
	// Key is the worker config key that named the topic
	// (config.storage.topic, …), quoted in errors and logs.
	Key string
	// Partitions is the partition count to create the topic with; -1
	// takes the broker's default (num.partitions). An existing topic keeps
	// its count.
	Partitions int
	// ReplicationFactor is the replication factor to create the topic
	// with, capped at the broker count (with a warning); -1 takes the
	// broker's default (default.replication.factor).
	ReplicationFactor int
	// SinglePartition requires exactly one partition, created or found
	// (the config topic: one partition keeps every change in one order).
	SinglePartition bool
	// Configs are extra topic configs for creation (min.insync.replicas…);
	// cleanup.policy comes from CleanupPolicy.
	Configs map[string]string
	// CleanupPolicy is the cleanup.policy the topic is created with and
	// must have: "" means compact (a store: its newest record per key is
	// the state); "delete" is for messages that only matter for a while
	// (the control topic), which compaction would lose.
	CleanupPolicy string
}

// policy is the spec's cleanup.policy.
func (s TopicSpec) policy() string {
	if s.CleanupPolicy == "" {
		return "compact"
	}
	return s.CleanupPolicy
}

// Topic is what EnsureTopic found or made.
type Topic struct {
	Name       string
	Partitions int
	// Created is true when this call created the topic.
	Created bool
}

// ErrBadTopic is wrapped by EnsureTopic when an existing topic cannot be
// used as an internal topic (not compacted, or more than one partition
// where one is required). The message names the topic, what was found and
// the fix.
var ErrBadTopic = errors.New("unusable internal topic")

// EnsureTopic creates spec's topic if it is missing, with its cleanup
// policy (compact unless the spec says delete), and waits until every
// partition has a leader. An existing topic is validated instead: it must
// have exactly that cleanup.policy (a store's topic compacted: delete
// would drop old records and with them state), and with SinglePartition
// exactly one partition; otherwise the error wraps ErrBadTopic and names
// the topic, what it found and the fix. A topic another worker creates at
// the same time is validated like an existing one. ctx bounds the whole
// call.
func (a *Admin) EnsureTopic(ctx context.Context, spec TopicSpec) (Topic, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	if spec.Name == "" {
		return Topic{}, fmt.Errorf("worker config: %s: no topic name given", spec.Key)
	}
	parts := spec.Partitions
	if spec.SinglePartition {
		parts = 1
	}
	if parts == 0 || parts < -1 {
		return Topic{}, fmt.Errorf("topic %q (%s): partitions must be positive or -1 (the broker's default), got %d", spec.Name, spec.Key, spec.Partitions)
	}
	if spec.ReplicationFactor == 0 || spec.ReplicationFactor < -1 {
		return Topic{}, fmt.Errorf("topic %q (%s): replication factor must be positive or -1 (the broker's default), got %d", spec.Name, spec.Key, spec.ReplicationFactor)
	}
	if t, found, err := a.describe(ctx, spec); err != nil || found {
		return t, err
	}
	rf := spec.ReplicationFactor
	if rf > 0 {
		brokers, err := a.Brokers(ctx)
		if err != nil {
			return Topic{}, err
		}
		if brokers > 0 && rf > brokers {
			a.logger.Warn("replication factor capped at the broker count", "topic", spec.Name, "key", spec.Key,
				"replication_factor", spec.ReplicationFactor, "brokers", brokers)
			rf = brokers
		}
	}
	cfg := map[string]string{}
	for k, v := range spec.Configs {
		cfg[k] = v
	}
	cfg["cleanup.policy"] = spec.policy()
	res, err := a.admin.CreateTopics(ctx, []kafka.TopicSpecification{{
		Topic: spec.Name, NumPartitions: parts, ReplicationFactor: rf, Config: cfg,
	}})
	if err != nil {
		return Topic{}, a.fail(fmt.Sprintf("create topic %q (%s)", spec.Name, spec.Key), err)
	}
	for _, r := range res {
		switch r.Error.Code() {
		case kafka.ErrNoError:
		case kafka.ErrTopicAlreadyExists:
			// Another worker won the race: check what it made.
			t, found, err := a.describe(ctx, spec)
			if err == nil && !found {
				err = fmt.Errorf("topic %q (%s) exists but cannot be described yet", spec.Name, spec.Key)
			}
			return t, err
		default:
			return Topic{}, a.fail(fmt.Sprintf("create topic %q (%s) with %d partitions, replication factor %d", spec.Name, spec.Key, parts, rf), r.Error)
		}
	}
	a.logger.Info("created internal topic", "topic", spec.Name, "key", spec.Key, "partitions", parts, "replication_factor", rf, "cleanup.policy", spec.policy())
	n, err := a.waitLeaders(ctx, spec)
	return Topic{Name: spec.Name, Partitions: n, Created: true}, err
}

// describe looks the topic up and validates it. found is false when the
// topic does not exist.
func (a *Admin) describe(ctx context.Context, spec TopicSpec) (Topic, bool, error) {
	res, err := a.admin.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{spec.Name}))
	if err != nil {
		return Topic{}, false, a.fail(fmt.Sprintf("describe topic %q (%s)", spec.Name, spec.Key), err)
	}
	if len(res.TopicDescriptions) != 1 {
		return Topic{}, false, fmt.Errorf("kafka at %s: describe topic %q (%s): %d answers", a.cfg.bootstrap, spec.Name, spec.Key, len(res.TopicDescriptions))
	}
	d := res.TopicDescriptions[0]
	switch d.Error.Code() {
	case kafka.ErrNoError:
	case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic:
		return Topic{}, false, nil
	default:
		return Topic{}, false, a.fail(fmt.Sprintf("describe topic %q (%s)", spec.Name, spec.Key), d.Error)
	}
	t := Topic{Name: spec.Name, Partitions: len(d.Partitions)}
	if spec.SinglePartition && t.Partitions != 1 {
		return t, true, fmt.Errorf("%w: topic %q (%s) has %d partitions, but it must have exactly one: a single partition keeps every config change in one order, "+
			"and Kafka cannot remove partitions. Fix: set %s to a new topic name (floe creates it with one partition), or delete the topic and let floe recreate it (its records are lost)",
			ErrBadTopic, spec.Name, spec.Key, t.Partitions, spec.Key)
	}
	policy, err := a.cleanupPolicy(ctx, spec)
	if err != nil {
		return t, true, err
	}
	switch want := spec.policy(); {
	case policy == want:
	case want == "compact":
		return t, true, fmt.Errorf("%w: topic %q (%s) has cleanup.policy=%s, but floe's internal topics must be compacted (cleanup.policy=compact), "+
			"or the broker deletes old records and the state they hold is lost. Fix: kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact, or set %s to another topic name",
			ErrBadTopic, spec.Name, spec.Key, policy, a.cfg.bootstrap, spec.Name, spec.Key)
	default:
		return t, true, fmt.Errorf("%w: topic %q (%s) has cleanup.policy=%s, but it must be %s: its records are messages, not state, and compaction would drop some. Fix: kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config cleanup.policy=%s, or set %s to another topic name",
			ErrBadTopic, spec.Name, spec.Key, policy, want, a.cfg.bootstrap, spec.Name, want, spec.Key)
	}
	for _, p := range d.Partitions {
		if p.Leader == nil {
			n, err := a.waitLeaders(ctx, spec)
			t.Partitions = n
			return t, true, err
		}
	}
	return t, true, nil
}

// cleanupPolicy returns the topic's cleanup.policy, normalised
// ("compact", "delete", "compact,delete").
func (a *Admin) cleanupPolicy(ctx context.Context, spec TopicSpec) (string, error) {
	res, err := a.admin.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: spec.Name}})
	if err != nil {
		return "", a.fail(fmt.Sprintf("describe the configs of topic %q (%s)", spec.Name, spec.Key), err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return "", a.fail(fmt.Sprintf("describe the configs of topic %q (%s)", spec.Name, spec.Key), r.Error)
		}
		if e, ok := r.Config["cleanup.policy"]; ok {
			var ps []string
			for _, p := range strings.Split(e.Value, ",") {
				if p = strings.TrimSpace(strings.ToLower(p)); p != "" {
					ps = append(ps, p)
				}
			}
			if len(ps) == 0 {
				return "(empty)", nil
			}
			return strings.Join(ps, ","), nil
		}
	}
	return "", fmt.Errorf("kafka at %s: topic %q (%s): the broker did not report cleanup.policy", a.cfg.bootstrap, spec.Name, spec.Key)
}

// waitLeaders waits until every partition of the topic has a leader, so
// the first produce or fetch does not race the topic's creation. It
// returns the partition count.
func (a *Admin) waitLeaders(ctx context.Context, spec TopicSpec) (int, error) {
	for {
		res, err := a.admin.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{spec.Name}))
		if err == nil && len(res.TopicDescriptions) == 1 {
			d := res.TopicDescriptions[0]
			ready := d.Error.Code() == kafka.ErrNoError && len(d.Partitions) > 0
			for _, p := range d.Partitions {
				if p.Leader == nil {
					ready = false
				}
			}
			if ready {
				return len(d.Partitions), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, a.fail(fmt.Sprintf("wait for the partitions of topic %q (%s) to have leaders", spec.Name, spec.Key), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TopicCount reads a worker key holding a topic's partition count or
// replication factor: a positive integer, or -1 for the broker's
// default; def when the key is empty.
func TopicCount(raw map[string]string, key string, def int) (int, error) {
	v := strings.TrimSpace(raw[key])
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || (n < 1 && n != -1) {
		return 0, fmt.Errorf("worker config: %s: must be a positive integer or -1 (the broker's default), got %q", key, v)
	}
	return n, nil
}
