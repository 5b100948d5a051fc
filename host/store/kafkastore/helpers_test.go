package kafkastore

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient/kclienttest"
)

// testTimeout bounds each test's calls; every test takes seconds.
const testTimeout = 60 * time.Second

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

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

// cluster is one test's cluster: a unique group.id and unique topics.
type cluster struct {
	b    kclienttest.Broker
	raw  map[string]string
	s    Settings
	logs *syncBuffer
}

func newCluster(t testing.TB, extra ...string) *cluster {
	t.Helper()
	b := kclienttest.Require(t)
	id := kclienttest.UniqueName("floe-kstore")
	raw := map[string]string{
		"bootstrap.servers":    b.Bootstrap,
		"group.id":             id,
		"config.storage.topic": id + "-configs",
		"offset.storage.topic": id + "-offsets",
		"status.storage.topic": id + "-status",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		raw[extra[i]] = extra[i+1]
	}
	return withRaw(t, b, raw)
}

func withRaw(t testing.TB, b kclienttest.Broker, raw map[string]string) *cluster {
	t.Helper()
	s, err := ParseSettings(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Leave the shared broker as it was (runs after the stores closed).
	t.Cleanup(func() {
		admin, err := s.Client.NewAdmin(nil)
		if err != nil {
			return
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = admin.Client().DeleteTopics(ctx, []string{s.ConfigTopic.Name, s.OffsetTopic.Name, s.StatusTopic.Name})
	})
	return &cluster{b: b, raw: raw, s: s, logs: &syncBuffer{}}
}

func (c *cluster) opts(worker string) Options {
	return Options{WorkerID: worker, Logger: slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("worker", worker)}
}

func (c *cluster) configs(t testing.TB, worker string) *Configs {
	t.Helper()
	cs, err := OpenConfigs(testCtx(t), c.s, c.opts(worker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	return cs
}

func (c *cluster) statuses(t testing.TB, worker string) *Statuses {
	t.Helper()
	s, err := OpenStatuses(testCtx(t), c.s, c.opts(worker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func (c *cluster) offsets(t testing.TB, worker string) *Offsets {
	t.Helper()
	o, err := OpenOffsets(testCtx(t), c.s, c.opts(worker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

// rawRecord is a record as it is in the topic.
type rawRecord struct {
	key     string
	value   []byte
	headers map[string]string
	offset  int64
}

// readRaw returns every committed record of the topic's partition 0, as a
// plain consumer sees it.
func readRaw(t testing.TB, c *cluster, topic string) []rawRecord {
	t.Helper()
	cons, err := c.s.Client.NewConsumer(nil, kafka.ConfigMap{
		"group.id": "raw-" + topic, "isolation.level": "read_committed", "enable.partition.eof": true, "enable.auto.commit": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cons.Close() }()
	if err := cons.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var out []rawRecord
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		switch e := cons.Poll(100).(type) {
		case *kafka.Message:
			r := rawRecord{key: string(e.Key), value: e.Value, headers: map[string]string{}, offset: int64(e.TopicPartition.Offset)}
			for _, h := range e.Headers {
				r.headers[h.Key] = string(h.Value)
			}
			out = append(out, r)
		case kafka.PartitionEOF:
			return out
		}
	}
	t.Fatalf("%s: no end of partition within 20 s", topic)
	return nil
}

// produceRaw writes one record as another application would.
func produceRaw(t testing.TB, c *cluster, topic string, key, value []byte, headers ...kafka.Header) {
	t.Helper()
	p, err := c.s.Client.NewProducer(nil, kafka.ConfigMap{"acks": "all"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dc := make(chan kafka.Event, 1)
	if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Key: key, Value: value, Headers: headers}, dc); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-dc:
		if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatal(m.TopicPartition.Error)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery report in 20 s")
	}
}
