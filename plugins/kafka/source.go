package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// source opens kafka tasks. It holds no state: tasks of one connector may
// be opened concurrently, each with its own consumer.
type source struct{}

// task is one running kafka source task: one consumer in the connector's
// group, a poll goroutine filling buf, and Read forming batches from it.
type task struct {
	log  *slog.Logger
	host sdk.SourceHost
	set  settings
	// c is the task's consumer, owned by the poll goroutine (which
	// replaces it when the group fences it); current is the same for
	// other goroutines.
	c       *member
	current atomic.Pointer[member]
	buf     *buffer
	mem     memory.Allocator

	// ctx lives as long as the task: the poll goroutine and the rebalance
	// callbacks use it for calls to the host. Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	epoch  time.Time // for record arrival times (monotonic)

	pollDone chan struct{}
	// closing is set once Close starts: rebalance callbacks then only
	// unassign, without asking the host.
	closing atomic.Bool

	// Owned by the poll goroutine (and the rebalance callbacks it runs).
	local []polled
	// errLog rate-limits the consumer's repeated errors: librdkafka
	// reports "all brokers are down" every 100 ms or so while they are.
	errLog errorLog
	// paused is set while backpressure holds the partitions paused; the
	// poll goroutine changes it, anyone may read it.
	paused atomic.Bool
	// pauses counts how often backpressure paused the partitions.
	pauses atomic.Int64
	// committing is set while an offset commit to the group is under way.
	committing atomic.Bool
	// replacedAt is when the poll goroutine last replaced a fenced
	// consumer.
	replacedAt time.Time
	// emptySince is since when the consumer has held no partition, and
	// starveChecked when the poll goroutine last looked (starved.go).
	emptySince, starveChecked time.Time
	tasks                     int // the connector's tasks, members of the group

	// Owned by the Read goroutine.
	schemas *schemaCache
	bb      batchBuilder
	closed  bool
}

// now is the time since the task started, on the monotonic clock.
func (t *task) now() time.Duration { return time.Since(t.epoch) }

// Open implements [sdk.Source]: it validates the config, creates the
// task's consumer, subscribes it to the topics (or pattern) with the
// rebalance handling of rebalance.go, and starts the poll goroutine. It
// does not wait for partitions: the group assigns them in the background.
func (source) Open(ctx context.Context, req sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	if req.Host == nil {
		return nil, errors.New("kafka: open: no host")
	}
	set, err := parseSettings(req.Config, req.Connector, req.Task)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	goLimit := set.fitMemory(req.Config, req.Tasks)
	reg, err := schemas.NewRegistry(set.registry)
	if err != nil {
		return nil, fmt.Errorf("kafka: %s: %w", KeyRegistryURL, err)
	}
	// The SDK's logger already names the connector and the task.
	log := req.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limitGoMemory(goLimit, log)

	instance, _ := set.kafka["group.instance.id"].(string)
	if err := closingConsumers.wait(ctx, instance, leaveWait); err != nil {
		return nil, err
	}
	// The task's own lifetime, not Open's: Open's ctx ends when it returns.
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	mem := memory.NewGoAllocator()
	t := &task{
		log:      log,
		host:     req.Host,
		set:      set,
		buf:      newBuffer(set.batchSize, set.linger),
		mem:      mem,
		ctx:      tctx,
		cancel:   cancel,
		epoch:    time.Now(),
		pollDone: make(chan struct{}),
		tasks:    max(req.Tasks, 1),
	}
	m, err := t.newMember()
	if err != nil {
		cancel()
		return nil, err
	}
	t.c = m
	t.current.Store(m)
	if err := t.subscribe(m); err != nil {
		cancel()
		_ = m.close()
		return nil, err
	}
	t.schemas = newSchemaCache(reg, redactedURL(set.registry.URL), req.Host, log, mem, set.retryTimeout, set.unknownTimeout)
	go t.pollLoop()
	log.Info("kafka task opened", "group", set.groupID, "topics", set.topics, "topics_regex", set.topicsRegex,
		"bootstrap", set.kafka["bootstrap.servers"], "batch_size", set.batchSize, "linger", set.linger,
		"buffer_max_bytes", set.maxBytes, "queued_max_messages_kbytes", set.kafka["queued.max.messages.kbytes"], "key_format", set.keyFormat)
	return t, nil
}

// Commit implements [sdk.SourceTask]: it commits positions to the
// consumer group, for monitoring (consumer lag in Connect's tooling);
// partitions this task no longer owns are left out. floe's truth is the
// sink, so a failed commit is only logged by the host. It returns when
// ctx ends even if the group has not answered (a rebalance under way);
// while that commit is still pending, later ones are skipped.
func (t *task) Commit(ctx context.Context, positions map[string]int64) error {
	if t.closed {
		return errClosed
	}
	var offsets []ckafka.TopicPartition
	for _, tp := range t.buf.assigned() {
		if pos, ok := positions[partitionName(tp.topic, tp.partition)]; ok && pos >= 0 {
			topic := tp.topic
			offsets = append(offsets, ckafka.TopicPartition{Topic: &topic, Partition: tp.partition, Offset: ckafka.Offset(pos)})
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	// librdkafka's commit has no deadline of its own (during a rebalance
	// it waits for the group's next generation): run it aside, answer by
	// ctx, and start no second one while it is under way. The positions
	// only grow, so a skipped commit is carried by the next one.
	if !t.committing.CompareAndSwap(false, true) {
		t.log.Debug("kafka: an offset commit is still under way; this one is left to the next")
		return nil
	}
	done := make(chan error, 1)
	m := t.current.Load()
	go func() {
		defer t.committing.Store(false)
		m.calls.RLock()
		defer m.calls.RUnlock()
		_, err := m.CommitOffsets(offsets)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("kafka: commit offsets of %d partitions to group %s: %w", len(offsets), t.set.groupID, err)
		}
		t.log.Debug("kafka: offsets committed to the group", "partitions", len(offsets))
		sdk.CrashPoint("kafka.after-commit") // crash tests: group offsets committed
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kafka: commit offsets to group %s: %w", t.set.groupID, ctx.Err())
	}
}

// Close implements [sdk.SourceTask]: it stops the poll goroutine, leaves
// the group (leaveGroup: its partitions go to the other members at once)
// and closes the consumer. The host is not told of the partitions given
// up this way: it closes the task after its own final checkpoint.
// Calling Close again does nothing.
func (t *task) Close(ctx context.Context) error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.closing.Store(true)
	t.cancel()
	<-t.pollDone
	var err error
	if t.c.fenced.Load() {
		// Nothing to leave, and librdkafka's close of a fenced consumer
		// may never end: it finishes in the background, and a successor
		// with the same static id need not wait for it.
		go func() { _ = t.c.close() }()
	} else {
		t.leaveGroup(ctx)
		err = t.closeConsumer(ctx)
	}
	t.bb.discard()
	t.schemas.release()
	t.log.Info("kafka task closed")
	return err
}

// closeConsumer closes the task's consumer, which leaves the group,
// within ctx; a close that takes longer goes on in the background, and
// a new task with the same static id waits for it (leaving.go).
func (t *task) closeConsumer(ctx context.Context) error {
	instance, _ := t.set.kafka["group.instance.id"].(string)
	left := closingConsumers.start(instance)
	done := make(chan error, 1)
	go func() {
		err := t.c.close()
		left()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("kafka: close consumer of group %s: %w (it goes on leaving the group in the background)", t.set.groupID, ctx.Err())
	}
}

// redactedURL hides a password in a URL for messages.
func redactedURL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	return parsed.Redacted()
}
