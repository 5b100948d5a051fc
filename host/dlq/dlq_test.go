package dlq

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

func headerMap(h []kafka.Header) map[string]string {
	m := map[string]string{}
	for _, x := range h {
		m[x.Key] = string(x.Value)
	}
	return m
}

func TestContextHeadersKafkaPartition(t *testing.T) {
	h := ContextHeaders(Origin{Connector: "orders", Task: 2, Component: "kafka"}, sdk.DeadLetter{
		Partition: "orders.v1/7", Offset: 42, Stage: "deserialize", Reason: "unknown magic byte 0x01",
	})
	want := map[string]string{
		HeaderTopic:            "orders.v1",
		HeaderPartition:        "7",
		HeaderOffset:           "42",
		HeaderConnectorName:    "orders",
		HeaderTaskID:           "2",
		HeaderStage:            "DESERIALIZE",
		HeaderClassName:        "kafka",
		HeaderExceptionClass:   dataException,
		HeaderExceptionMessage: "unknown magic byte 0x01",
		HeaderStacktrace:       dataException + ": unknown magic byte 0x01",
	}
	got := headerMap(h)
	if len(got) != len(want) {
		t.Fatalf("got %d headers %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if h[0].Key != HeaderTopic || h[len(h)-1].Key != HeaderStacktrace {
		t.Errorf("order: first %s, last %s", h[0].Key, h[len(h)-1].Key)
	}
}

func TestContextHeadersOtherSource(t *testing.T) {
	got := headerMap(ContextHeaders(Origin{Connector: "c", Component: "iceberg"}, sdk.DeadLetter{
		Partition: "datagen-0", Offset: 3, Stage: "write", Reason: "null in required field id",
	}))
	if got[HeaderTopic] != "datagen-0" {
		t.Errorf("topic = %q", got[HeaderTopic])
	}
	if _, ok := got[HeaderPartition]; ok {
		t.Errorf("partition header set for a non-Kafka partition")
	}
	if got[HeaderExceptionClass] != connectException || got[HeaderStage] != "WRITE" {
		t.Errorf("class %q stage %q", got[HeaderExceptionClass], got[HeaderStage])
	}
}

func TestMessageKeepsRecordAndHeaders(t *testing.T) {
	r := sdk.DeadLetter{Partition: "t/0", Offset: 1, TimestampMs: 1700000000000, Key: []byte("k"), Value: []byte("v"),
		Headers: map[string][]byte{"b": []byte("2"), "a": []byte("1")}, Stage: "convert", Reason: "x"}
	m := message("dlq", Origin{Connector: "c"}, r, true)
	if string(m.Key) != "k" || string(m.Value) != "v" || *m.TopicPartition.Topic != "dlq" {
		t.Fatalf("message %+v", m)
	}
	if m.Headers[0].Key != "a" || m.Headers[1].Key != "b" || len(m.Headers) != 2+10 {
		t.Fatalf("headers %v", m.Headers)
	}
	if m.Timestamp.UnixMilli() != r.TimestampMs {
		t.Errorf("timestamp %v", m.Timestamp)
	}
	if m := message("dlq", Origin{}, r, false); len(m.Headers) != 2 {
		t.Fatalf("without context: %d headers", len(m.Headers))
	}
}

func TestSplitPartition(t *testing.T) {
	for _, c := range []struct {
		in    string
		topic string
		part  int32
		ok    bool
	}{
		{"orders/3", "orders", 3, true},
		{"a/b/12", "a/b", 12, true},
		{"datagen-0", "datagen-0", 0, false},
		{"orders/x", "orders/x", 0, false},
		{"/3", "/3", 0, false},
		{"orders/", "orders/", 0, false},
	} {
		topic, part, ok := SplitPartition(c.in)
		if topic != c.topic || part != c.part || ok != c.ok {
			t.Errorf("SplitPartition(%q) = %q %d %v", c.in, topic, part, ok)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("c", map[string]string{
		KeyTolerance: "all", KeyTopic: "dlq", KeyKafkaBootstrap: "k:9092",
		KeyProducerPrefix + "acks": "1", KeyReplicationFactor: "1", KeyContextHeaders: "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.TolerateAll || c.Topic != "dlq" || c.Producer["bootstrap.servers"] != "k:9092" || c.Producer["acks"] != "1" ||
		c.ReplicationFactor != 1 || c.ContextHeaders {
		t.Fatalf("%+v", c)
	}
	c, _ = ParseConfig("c", map[string]string{KeyKafkaBootstrap: "a:1", KeyProducerPrefix + "bootstrap.servers": "b:2"})
	if c.Producer["bootstrap.servers"] != "b:2" || c.TolerateAll || !c.ContextHeaders || c.ReplicationFactor != 3 {
		t.Fatalf("defaults/precedence: %+v", c)
	}
	for cfg, key := range map[string]map[string]string{
		KeyTolerance:         {KeyTolerance: "some"},
		KeyReplicationFactor: {KeyReplicationFactor: "zero"},
		KeyLogEnable:         {KeyLogEnable: "yes please"},
		KeyTopic:             {KeyTolerance: "all", KeyTopic: "dlq"},
	} {
		if _, err := ParseConfig("c", key); err == nil || !strings.Contains(err.Error(), cfg) {
			t.Errorf("%v: got %v, want an error naming %s", key, err, cfg)
		}
	}
}

func TestToleranceNoneFails(t *testing.T) {
	r := NewReporter(Config{Connector: "c"}, nil)
	err := r.Report(context.Background(), Origin{Connector: "c"}, []sdk.DeadLetter{
		{Partition: "t/1", Offset: 9, Stage: "deserialize", Reason: "bad"}, {Partition: "t/1", Offset: 10},
	})
	if err == nil || !strings.Contains(err.Error(), "t/1@9") || !strings.Contains(err.Error(), "errors.tolerance") || !strings.Contains(err.Error(), "1 more") {
		t.Fatalf("got %v", err)
	}
}

func TestToleranceAllWithoutTopicLogs(t *testing.T) {
	r := NewReporter(Config{Connector: "c", TolerateAll: true, LogEnable: true, LogIncludeMessages: true}, nil)
	if err := r.Report(context.Background(), Origin{}, []sdk.DeadLetter{{Partition: "p", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	r.Close(context.Background())
}

// TestProduceToMockCluster stores dead letters in librdkafka's in-process
// mock cluster and reads them back.
func TestProduceToMockCluster(t *testing.T) {
	mc, err := kafka.NewMockCluster(1)
	if err != nil {
		t.Skipf("librdkafka mock cluster unavailable: %v", err)
	}
	defer mc.Close()
	// The mock cluster does not serve CreateTopics: the topic exists
	// already, which also covers the "topic exists" path.
	produceAndConsume(t, mc.BootstrapServers(), 3, func(topic string) error { return mc.CreateTopic(topic, 1, 1) })
}

// TestProduceToBroker runs against a real broker when FLOE_KAFKA_BOOTSTRAP
// is set (e2e/services/up prints it).
func TestProduceToBroker(t *testing.T) {
	bootstrap := os.Getenv("FLOE_KAFKA_BOOTSTRAP")
	if bootstrap == "" {
		t.Skip("FLOE_KAFKA_BOOTSTRAP not set: start a broker with e2e/services/up to run this test")
	}
	produceAndConsume(t, bootstrap, 3, nil)
}

func produceAndConsume(t *testing.T, bootstrap string, rf int, precreate func(string) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := fmt.Sprintf("floe-dlq-test-%d", time.Now().UnixNano())
	if precreate != nil {
		if err := precreate(topic); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := ParseConfig("orders", map[string]string{
		KeyTolerance: "all", KeyTopic: topic, KeyKafkaBootstrap: bootstrap,
		KeyReplicationFactor: fmt.Sprint(rf), KeyLogEnable: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReporter(cfg, nil)
	defer r.Close(ctx)
	recs := []sdk.DeadLetter{
		{Partition: "orders/0", Offset: 5, Key: []byte("k5"), Value: []byte("v5"), Stage: "deserialize", Reason: "bad magic byte"},
		{Partition: "orders/0", Offset: 6, Key: []byte("k6"), Value: []byte("v6"), Stage: "schema", Reason: "int to string",
			Headers: map[string][]byte{"trace": []byte("abc")}},
	}
	if err := r.Report(ctx, Origin{Connector: "orders", Task: 1, Component: "kafka"}, recs); err != nil {
		t.Fatal(err)
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var got []*kafka.Message
	for len(got) < len(recs) && ctx.Err() == nil {
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			continue
		}
		got = append(got, m)
	}
	if len(got) != len(recs) {
		t.Fatalf("read %d dead letters, want %d", len(got), len(recs))
	}
	h := headerMap(got[1].Headers)
	if string(got[1].Value) != "v6" || h["trace"] != "abc" || h[HeaderOffset] != "6" || h[HeaderStage] != "SCHEMA" ||
		h[HeaderTaskID] != "1" || h[HeaderTopic] != "orders" || h[HeaderPartition] != "0" {
		t.Fatalf("second dead letter: value %q headers %v", got[1].Value, h)
	}
}
