package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient/kclienttest"
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

// The record's own header list goes out as it came: order, repeats,
// null and empty values, before Connect's headers.
func TestMessageKeepsHeaderList(t *testing.T) {
	r := sdk.DeadLetter{Partition: "t/0", Key: []byte{}, HeaderList: []sdk.Header{
		{Key: "t", Value: []byte("b")}, {Key: "t", Value: []byte("a")}, {Key: "n"}, {Key: "e", Value: []byte{}}}}
	m := message("dlq", Origin{}, r, true)
	if m.Key == nil || m.Value != nil {
		t.Errorf("key %v value %v, want empty and null", m.Key, m.Value)
	}
	for i, h := range r.HeaderList {
		got := m.Headers[i]
		if got.Key != h.Key || (got.Value == nil) != (h.Value == nil) || string(got.Value) != string(h.Value) {
			t.Errorf("header %d = %q %v, want %q %v", i, got.Key, got.Value, h.Key, h.Value)
		}
	}
	if m.Headers[4].Key != HeaderTopic {
		t.Errorf("header 4 is %q, want Connect's %s after the record's own", m.Headers[4].Key, HeaderTopic)
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
		kclienttest.Unavailable(t, "needs librdkafka's mock cluster: "+err.Error())
	}
	defer mc.Close()
	// The mock cluster does not serve CreateTopics: the topic exists
	// already, which also covers the "topic exists" path.
	produceAndConsume(t, mc.BootstrapServers(), 3, func(topic string) error { return mc.CreateTopic(topic, 1, 1) })
}

// TestProduceToBroker runs against a real broker when FLOE_KAFKA_BOOTSTRAP
// is set (e2e/services/up prints it).
func TestProduceToBroker(t *testing.T) {
	produceAndConsume(t, kclienttest.Require(t).Bootstrap, 3, nil)
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
	defer func() { _ = c.Close() }()
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

func TestParseConfigInheritsConnectionSettings(t *testing.T) {
	src := map[string]string{
		KeyTolerance: "all", KeyTopic: "dlq",
		"kafka.bootstrap.servers":                "k:9093",
		"kafka.security.protocol":                "SASL_SSL",
		"kafka.sasl.mechanisms":                  "SCRAM-SHA-256",
		"kafka.sasl.username":                    "floe",
		"kafka.sasl.password":                    "secret",
		"kafka.ssl.ca.location":                  "/ca.pem",
		"kafka.client.dns.lookup":                "use_all_dns_ips",
		"kafka.socket.timeout.ms":                "5000",
		"kafka.fetch.max.bytes":                  "1000",       // consumer only
		"kafka.group.instance.id":                "x",          // consumer only
		"kafka.client.id":                        "the-source", // the producer names itself
		KeyProducerPrefix + "sasl.username":      "dlq-writer", // producer.* wins
		KeyProducerPrefix + "message.timeout.ms": "60000",
	}
	c, err := ParseConfig("c", src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"bootstrap.servers": "k:9093", "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
		"sasl.username": "dlq-writer", "sasl.password": "secret", "ssl.ca.location": "/ca.pem",
		"client.dns.lookup": "use_all_dns_ips", "socket.timeout.ms": "5000", "message.timeout.ms": "60000",
	}
	if len(c.Producer) != len(want) {
		t.Errorf("producer settings %v, want %v", c.Producer, want)
	}
	for k, v := range want {
		if c.Producer[k] != v {
			t.Errorf("producer %s = %q, want %q", k, c.Producer[k], v)
		}
	}

	// Another cluster: nothing is inherited.
	src[KeyProducerPrefix+"bootstrap.servers"] = "other:9092"
	c, err = ParseConfig("c", src)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Producer["security.protocol"]; ok || c.Producer["bootstrap.servers"] != "other:9092" || c.Producer["sasl.password"] != "" {
		t.Errorf("with its own bootstrap.servers the producer inherited %v", c.Producer)
	}
}

// TestReportNamesTheProducerError: when the broker cannot be reached, the
// error the source task fails with names the topic and what the producer
// saw, not only a timeout; a Report cut short by its ctx does not fail.
func TestReportNamesTheProducerError(t *testing.T) {
	cfg, err := ParseConfig("orders", map[string]string{
		KeyTolerance: "all", KeyTopic: "orders-dlq", KeyKafkaBootstrap: closedAddr(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = 3 * time.Second
	var logs syncBuffer
	r := NewReporter(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("connector", "orders"))
	defer r.Close(context.Background())
	recs := []sdk.DeadLetter{{Partition: "orders/0", Offset: 1, Stage: "deserialize", Reason: "bad"}}

	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = r.Report(short, Origin{Connector: "orders"}, recs)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Report with a short ctx: %v, want its deadline", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Report with a 200 ms ctx returned after %s", took)
	}

	ctx, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	err = r.Report(ctx, Origin{Connector: "orders"}, recs)
	if err == nil {
		t.Fatal("Report to a closed port succeeded")
	}
	t.Logf("the source task would fail with: %v", err)
	for _, want := range []string{"dead-letter queue orders-dlq:", "brokers are down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if errors.Is(err, sdk.ErrPermanent) {
		t.Errorf("brokers that are down are an outage, but the error is marked permanent: %v", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the failure came after the caller's ctx ended: it would never reach the source")
	}
	// librdkafka's own lines go to the connector's logger, not to stderr.
	if out := logs.String(); !strings.Contains(out, "dead-letter producer: ") || !strings.Contains(out, "connector=orders") || !strings.Contains(out, "facility=") {
		t.Errorf("librdkafka's logs did not reach the logger:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the producer's goroutines.
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

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestRetriedReportDoesNotProduceTwice: a Report whose ctx ends before the
// broker acknowledges, retried with the same records (the source reads
// them again), stores each record once.
func TestRetriedReportDoesNotProduceTwice(t *testing.T) {
	mc, err := kafka.NewMockCluster(1)
	if err != nil {
		kclienttest.Unavailable(t, "needs librdkafka's mock cluster: "+err.Error())
	}
	defer mc.Close()
	topic := fmt.Sprintf("floe-dlq-retry-%d", time.Now().UnixNano())
	if err := mc.CreateTopic(topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig("orders", map[string]string{KeyTolerance: "all", KeyTopic: topic, KeyKafkaBootstrap: mc.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReporter(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer r.Close(ctx)
	o := Origin{Connector: "orders"}
	if err := r.Report(ctx, o, []sdk.DeadLetter{{Partition: "orders/0", Offset: 1, Stage: "deserialize"}}); err != nil {
		t.Fatal(err)
	}
	if err := mc.SetRoundtripDuration(1, 2*time.Second); err != nil {
		kclienttest.Unavailable(t, "needs the mock cluster's round-trip delay: "+err.Error())
	}
	slow := []sdk.DeadLetter{{Partition: "orders/0", Offset: 2, Stage: "deserialize"}, {Partition: "orders/0", Offset: 3, Stage: "deserialize"}}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err = r.Report(short, o, slow)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Report during a slow round trip: %v, want its deadline", err)
	}
	// Still slow: the retry must wait for the records in flight, not
	// produce them again.
	if err := r.Report(ctx, o, slow); err != nil {
		t.Fatal(err)
	}
	if err := mc.SetRoundtripDuration(1, 0); err != nil {
		t.Fatal(err)
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": mc.BootstrapServers(), "group.id": topic, "auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	offsets := map[string]int{}
	quiet := time.Now().Add(3 * time.Second)
	for time.Now().Before(quiet) && ctx.Err() == nil {
		m, err := c.ReadMessage(200 * time.Millisecond)
		if err != nil {
			continue
		}
		offsets[headerMap(m.Headers)[HeaderOffset]]++
	}
	if len(offsets) != 3 || offsets["1"] != 1 || offsets["2"] != 1 || offsets["3"] != 1 {
		t.Fatalf("dead letters by source offset %v, want 1, 2 and 3 once each", offsets)
	}
}

// TestProduceOverSASL stores a dead letter on the SASL listener of a real
// broker with only the source's kafka.* settings, when FLOE_KAFKA_SASL_*
// are set (e2e/services/up with sasl=1 prints them).
func TestProduceOverSASL(t *testing.T) {
	b := kclienttest.RequireSASL(t)
	bootstrap, user, pass := b.SASLBootstrap, b.SASLUser, b.SASLPassword
	cfg, err := ParseConfig("orders", map[string]string{
		KeyTolerance: "all", KeyTopic: fmt.Sprintf("floe-dlq-sasl-%d", time.Now().UnixNano()), KeyReplicationFactor: "1",
		"kafka.bootstrap.servers": bootstrap, "kafka.security.protocol": "SASL_PLAINTEXT",
		"kafka.sasl.mechanisms": "SCRAM-SHA-256", "kafka.sasl.username": user, "kafka.sasl.password": pass,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := NewReporter(cfg, nil)
	defer r.Close(ctx)
	if err := r.Report(ctx, Origin{Connector: "orders"}, []sdk.DeadLetter{{Partition: "orders/0", Offset: 1, Stage: "deserialize"}}); err != nil {
		t.Fatal(err)
	}
}

// TestReportWithAWrongPasswordIsPermanent: the broker refusing the
// producer's credentials fails the Report at once (not after the connect
// timeout), marked permanent so that no restart retries it, naming what to
// fix and not the password.
func TestReportWithAWrongPasswordIsPermanent(t *testing.T) {
	b := kclienttest.RequireSASL(t)
	wrong := b.SASLPassword + "-wrong"
	cfg, err := ParseConfig("orders", map[string]string{
		KeyTolerance: "all", KeyTopic: fmt.Sprintf("floe-dlq-refused-%d", time.Now().UnixNano()), KeyReplicationFactor: "1",
		"kafka.bootstrap.servers": b.SASLBootstrap, "kafka.security.protocol": "SASL_PLAINTEXT",
		"kafka.sasl.mechanisms": "SCRAM-SHA-256", "kafka.sasl.username": b.SASLUser, "kafka.sasl.password": wrong,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := NewReporter(cfg, nil)
	defer r.Close(ctx)
	start := time.Now()
	err = r.Report(ctx, Origin{Connector: "orders"}, []sdk.DeadLetter{{Partition: "orders/0", Offset: 1, Stage: "deserialize"}})
	took := time.Since(start)
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("a dead letter was stored with a wrong password")
	}
	if !errors.Is(err, sdk.ErrPermanent) {
		t.Errorf("a refused password is not marked permanent: %v", err)
	}
	for _, want := range []string{"Authentication", "kafka.sasl.*", cfg.Topic} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("the error shows the password: %v", err)
	}
	if took >= DefaultConnectTimeout {
		t.Errorf("the refusal took %s, the whole connect timeout", took)
	}
}

// TestRefusalsArePermanentOutagesAreNot: the broker's refusals of the
// credentials or an ACL are permanent; outages, timeouts and fatal
// errors are not (a fatal error retires the producer instead).
func TestRefusalsArePermanentOutagesAreNot(t *testing.T) {
	r := NewReporter(Config{Connector: "orders", Topic: "orders-dlq"}, nil)
	base := errors.New("dead-letter queue orders-dlq: delivery failed")
	for _, code := range []kafka.ErrorCode{kafka.ErrAuthentication, kafka.ErrSaslAuthenticationFailed, kafka.ErrUnsupportedSaslMechanism,
		kafka.ErrTopicAuthorizationFailed, kafka.ErrClusterAuthorizationFailed, kafka.ErrTransactionalIDAuthorizationFailed} {
		err := r.settle(base, kafka.NewError(code, code.String(), false))
		if !errors.Is(err, sdk.ErrPermanent) || !errors.Is(err, base) || !strings.Contains(err.Error(), "WRITE and DESCRIBE on topic orders-dlq") {
			t.Errorf("%v: %v; want a permanent error that keeps the cause and names the ACL", code, err)
		}
	}
	for _, cause := range []error{
		kafka.NewError(kafka.ErrAllBrokersDown, "1/1 brokers are down", false),
		kafka.NewError(kafka.ErrTransport, "Connection refused", false),
		kafka.NewError(kafka.ErrMsgTimedOut, "Local: Message timed out", false),
		kafka.NewError(kafka.ErrNotLeaderForPartition, "Broker: Not leader for partition", false),
		kafka.NewError(kafka.ErrRequestTimedOut, "Broker: Request timed out", false),
		kafka.NewError(kafka.ErrFatal, "Local: Fatal error", false),
		kafka.NewError(kafka.ErrOutOfOrderSequenceNumber, "Broker: out of order sequence number", true),
		kafka.NewError(kafka.ErrAuthentication, oauthTokenFailure+": connect: connection refused", false),
		context.DeadlineExceeded,
	} {
		if err := r.settle(base, cause); errors.Is(err, sdk.ErrPermanent) {
			t.Errorf("%v is marked permanent: %v", cause, err)
		}
	}
	// A refusal the producer reported makes a later timeout permanent:
	// the deliveries time out because the broker refused the producer.
	r.noteError(kafka.NewError(kafka.ErrAuthentication, "SASL authentication error: invalid credentials", false))
	if err := r.settle(base, kafka.NewError(kafka.ErrMsgTimedOut, "Local: Message timed out", false)); !errors.Is(err, sdk.ErrPermanent) {
		t.Errorf("after a refusal, a timed-out delivery is not permanent: %v", err)
	}
	r.forgetErrors() // a new producer
	if err := r.settle(base, kafka.NewError(kafka.ErrMsgTimedOut, "Local: Message timed out", false)); errors.Is(err, sdk.ErrPermanent) {
		t.Errorf("a new producer still carries the old one's refusal: %v", err)
	}
}

// TestFatalErrorRetiresTheProducer: after a fatal error the producer is
// unusable; the reporter (which outlives the tasks restarted in place)
// connects a new one, so the next Report stores its records.
func TestFatalErrorRetiresTheProducer(t *testing.T) {
	mc, err := kafka.NewMockCluster(1)
	if err != nil {
		kclienttest.Unavailable(t, "needs librdkafka's mock cluster: "+err.Error())
	}
	defer mc.Close()
	topic := fmt.Sprintf("floe-dlq-fatal-%d", time.Now().UnixNano())
	if err := mc.CreateTopic(topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig("orders", map[string]string{KeyTolerance: "all", KeyTopic: topic, KeyKafkaBootstrap: mc.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReporter(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer r.Close(ctx)
	o := Origin{Connector: "orders"}
	if err := r.Report(ctx, o, []sdk.DeadLetter{{Partition: "orders/0", Offset: 1, Stage: "deserialize"}}); err != nil {
		t.Fatal(err)
	}
	current := func() *kafka.Producer {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.producer
	}
	first := current()
	if code := first.TestFatalError(kafka.ErrOutOfOrderSequenceNumber, "test: a fatal error"); code != kafka.ErrNoError {
		kclienttest.Unavailable(t, "needs librdkafka's fatal error test hook: "+code.String())
	}
	for deadline := time.Now().Add(10 * time.Second); current() == first; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the producer was not retired 10 s after its fatal error")
		}
	}
	if err := r.Report(ctx, o, []sdk.DeadLetter{{Partition: "orders/0", Offset: 2, Stage: "deserialize"}}); err != nil {
		t.Fatalf("the Report after a fatal error: %v", err)
	}
	if p := current(); p == nil || p == first {
		t.Fatalf("the Report after a fatal error did not connect a new producer")
	}
}

// TestSkipsHonourRequireServices: under make test (FLOE_REQUIRE_SERVICES=1)
// a test that cannot find its broker fails instead of passing by
// skipping. This package's tests once skipped by hand; they go through
// kclienttest, which honours it.
func TestSkipsHonourRequireServices(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	direct := regexp.MustCompile(`\bt\.Skip(f|Now)?\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if direct.MatchString(line) && !strings.Contains(line, "direct.MatchString") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d skips without honouring FLOE_REQUIRE_SERVICES (use kclienttest.Require or kclienttest.Unavailable): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
