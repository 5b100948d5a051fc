package kafka

import (
	"strings"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
)

// intruder joins the task's group with the task's group.instance.id, so
// the broker fences the task's consumer, as happens when librdkafka
// rejoins under a new member id after a broker restart. It polls until
// it is fenced in turn (fenced is closed then) or closed.
type intruder struct {
	c      *ckafka.Consumer
	fenced chan struct{}
	done   chan struct{}
	stop   chan struct{}
}

func intrude(t *testing.T, env kafkatest.Env, tk *task) *intruder {
	t.Helper()
	c, err := ckafka.NewConsumer(&ckafka.ConfigMap{
		"bootstrap.servers":             env.Bootstrap,
		"broker.address.family":         "v4",
		"group.id":                      tk.set.groupID,
		"group.instance.id":             tk.set.kafka["group.instance.id"],
		"partition.assignment.strategy": "cooperative-sticky",
		"session.timeout.ms":            10_000,
		"enable.auto.commit":            false,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeTopics(tk.set.topics, nil); err != nil {
		t.Fatal(err)
	}
	in := &intruder{c: c, fenced: make(chan struct{}), done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(in.done)
		for {
			select {
			case <-in.stop:
				return
			default:
			}
			if e, ok := c.Poll(100).(ckafka.Error); ok && e.IsFatal() {
				close(in.fenced)
				return
			}
		}
	}()
	return in
}

// close stops polling and closes the intruder in the background: the
// close of a consumer that was fenced never ends (librdkafka waits for a
// group leave it cannot make), as replaceFenced knows.
func (in *intruder) close() {
	close(in.stop)
	<-in.done
	go func() { _ = in.c.Close() }()
}

// A task whose consumer is fenced by a member with its group.instance.id
// joins again with a new consumer and goes on reading: nothing lost,
// nothing read twice, no task failure. A second fence within a minute
// means two consumers really share the id: the task fails, naming it.
func TestFencedConsumerJoinsAgain(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("fenced")
	createTopic(t, env, topic, 3)
	os := registerOrders(t, env, topic+"-value")
	cfg := baseConfig(env, topic)
	l := newLedger(t)
	produced := 0
	wave := func(n int) {
		var recs []kafkatest.Record
		for i := range n {
			id := int64(produced + i)
			recs = append(recs, kafkatest.Record{Partition: int32(id % 3), Value: os.order(t, 0, id)})
		}
		produce(t, env, topic, 0, recs)
		produced += n
	}

	host := newFakeHost(l, "a")
	tk := openTask(t, "fenced", 0, 1, host, cfg)
	defer closeTask(t, tk)
	run := startRunner(t, tk, host)
	waitAll := func(what string) {
		t.Helper()
		ok := l.waitFor(time.Minute, func() bool {
			n, _ := l.rows()
			return n >= produced || run.failed() != nil
		})
		if err := run.failed(); err != nil {
			t.Fatalf("%s: the task failed: %v", what, err)
		}
		if n, _ := l.rows(); !ok {
			t.Fatalf("%s: %d of %d records within a minute", what, n, produced)
		}
	}
	wave(600)
	waitAll("before the fence")

	in := intrude(t, env, tk)
	select {
	case <-in.fenced:
	case <-time.After(time.Minute):
		in.close()
		t.Fatal("the task did not take its group.instance.id back from the intruder within a minute")
	}
	in.close()
	if len(host.revocations()) == 0 {
		t.Fatal("the intruder was fenced, but the task never gave its partitions up to join again")
	}
	wave(600)
	waitAll("after the task joined again")
	if distinct, dups := l.rows(); distinct != produced || dups != 0 {
		t.Fatalf("%d distinct rows, %d duplicates; want %d and none", distinct, dups, produced)
	}

	// A second fence so soon: the task fails with the id in the reason.
	in = intrude(t, env, tk)
	defer in.close()
	select {
	case <-run.done:
	case <-time.After(time.Minute):
		t.Fatal("a second fence within a minute did not fail the task")
	}
	err := run.failed()
	id, _ := tk.set.kafka["group.instance.id"].(string)
	if err == nil || !strings.Contains(err.Error(), "fenced again") || !strings.Contains(err.Error(), id) {
		t.Fatalf("the task failed with %v; want an error saying it was fenced again, naming %s", err, id)
	}
}
