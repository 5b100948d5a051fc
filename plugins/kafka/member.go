package kafka

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// member is one librdkafka consumer of a task: the task's group member.
// A task has one at a time; it replaces it only when the broker fences it
// (see replaceFenced).
type member struct {
	*ckafka.Consumer
	// calls is held for reading by calls made on other goroutines than
	// the poll loop (offset commits), and for writing by close: closing
	// the client under such a call would free what the call still uses.
	calls sync.RWMutex
	// logsDone is closed once the consumer's log channel is drained.
	logsDone chan struct{}
	// fenced is set once the consumer reported a fatal error: closing it
	// then may never end.
	fenced atomic.Bool
}

// newMember creates a consumer with the task's settings and starts
// forwarding its logs. It does not subscribe.
func (t *task) newMember() (*member, error) {
	c, err := ckafka.NewConsumer(&t.set.kafka)
	if err != nil {
		return nil, fmt.Errorf("kafka: create consumer (%s=%s): %w; check the %s settings",
			KeyBootstrapServers, t.set.kafka["bootstrap.servers"], err, KeyKafkaPrefix)
	}
	m := &member{Consumer: c, logsDone: make(chan struct{})}
	go t.forwardLogs(m)
	return m, nil
}

// subscribe subscribes m to the task's topics (or pattern), with the
// rebalance handling of rebalance.go.
func (t *task) subscribe(m *member) error {
	subscription := t.set.topics
	if t.set.topicsRegex != "" {
		subscription = []string{t.set.topicsRegex}
	}
	if err := m.SubscribeTopics(subscription, t.rebalance); err != nil {
		return fmt.Errorf("kafka: subscribe to %v: %w", subscription, err)
	}
	return nil
}

// close closes the consumer once no other goroutine's call is under way
// on it, and waits for its logs to drain.
func (m *member) close() error {
	m.calls.Lock()
	defer m.calls.Unlock()
	err := m.Close()
	<-m.logsDone
	return err
}

// fenceRejoinEvery bounds how often a task replaces a fenced consumer: a
// second fence sooner than this after a replacement fails the task.
const fenceRejoinEvery = time.Minute

// replaceFenced handles a fatal consumer error, which librdkafka raises
// for one cause only: the broker fenced this static member because
// another one joined with the same group.instance.id. The id names the
// task, its worker and its data dir, and a data dir has one worker, so
// the newer member is almost always this consumer itself: after a broker
// restart librdkafka rejoins under a new member id while a request of the
// old one (an offset commit) is still in flight, and the broker answers
// that request with the fence. The consumer is unusable after a fatal
// error, so the task gives its partitions up as in a revocation (the host
// learns where each stopped), closes the consumer in the background and
// joins again with a new one, which the group assigns partitions as
// usual. A fence within fenceRejoinEvery of the last replacement means
// two consumers really share the id: the task fails, naming it. Runs on
// the poll goroutine.
func (t *task) replaceFenced(cause ckafka.Error) {
	t.c.fenced.Store(true)
	instance, _ := t.set.kafka["group.instance.id"].(string)
	now := time.Now()
	if !t.replacedAt.IsZero() && now.Sub(t.replacedAt) < fenceRejoinEvery {
		t.buf.fail(fmt.Errorf("kafka: consumer of group %s failed: %w; it was fenced again %s after it rejoined: "+
			"another consumer uses group.instance.id %q (a second floe worker with the same data dir and connector?); "+
			"stop it, or set %s=false", t.set.groupID, cause, now.Sub(t.replacedAt).Round(time.Millisecond), instance, KeyStaticMembership))
		return
	}
	t.replacedAt = now
	t.log.Warn("kafka: the group fenced this task's consumer (a newer member with its group.instance.id, usually itself after a broker restart); "+
		"giving its partitions up and joining again with a new consumer", "group", t.set.groupID, "group_instance_id", instance, "error", cause)

	t.flushLocal()
	tps := t.buf.assigned()
	next := t.buf.revoke(tps)
	if len(next) > 0 {
		if err := t.host.PartitionsRevoked(t.ctx, next); err != nil {
			t.log.Warn("kafka: floe could not checkpoint the partitions of the fenced consumer; whoever takes them resumes from the sink's frontier",
				"error", err)
		}
	}
	m, err := t.newMember()
	if err != nil {
		t.buf.fail(err)
		return
	}
	old := t.c
	t.c = m
	t.current.Store(m)
	t.setPaused(false)
	// A fenced consumer has nothing to leave, yet librdkafka's close of it
	// may never end (it waits for a leave it cannot make): close it in
	// the background. Its rebalance callbacks during the close see it is
	// stale.
	go func() {
		if err := old.close(); err != nil {
			t.log.Debug("kafka: closing the fenced consumer", "error", err)
		}
	}()
	if err := t.subscribe(m); err != nil {
		t.buf.fail(err)
		return
	}
	names := make([]string, len(tps))
	for i, tp := range tps {
		names[i] = partitionName(tp.topic, tp.partition)
	}
	t.log.Info("kafka: joined the group again with a new consumer", "group", t.set.groupID, "given_up", strings.Join(names, ", "), "next", next)
}
