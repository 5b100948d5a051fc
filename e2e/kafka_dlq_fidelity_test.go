package e2e

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

// A dead letter is the record as it was, byte for byte, as Connect's DLQ
// re-emits it: headers in order with repeats, a null header apart from an
// empty one, an empty key or value apart from a null one. Connect's
// __connect.errors.* headers follow the record's own.
func TestDeadLetterKeepsTheRecordAsItWas(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry)
	ctx := harness.Context(t, 5*time.Minute)
	topic := harness.UniqueName("e2e_dlq_fidelity")
	if err := harness.CreateTopic(ctx, env, topic, 1); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", dlqSchema)
	if err != nil {
		t.Fatal(err)
	}
	good, err := avro.Marshal(avro.MustParse(dlqSchema), map[string]any{"id": int64(1), "memo": "good"})
	if err != nil {
		t.Fatal(err)
	}
	headers := []harness.Header{
		{Key: "trace", Value: []byte("a")}, {Key: "trace", Value: []byte("b")},
		{Key: "nullh", Value: nil}, {Key: "emptyh", Value: []byte{}}, {Key: "bin", Value: []byte{0x00, 0xff}},
		{Key: "", Value: []byte("empty name")},
	}
	// Offsets 0–2 are bad, 3 is good.
	records := []harness.Record{
		{Key: []byte{}, Value: []byte{7, 1, 2, 3}, HeaderList: headers}, // bad magic byte, empty key
		{Key: nil, Value: []byte{}},                                     // empty value, null key
		{Key: []byte("k"), Value: nil, HeaderList: headers[2:3]},        // tombstone
		{Key: []byte("ok"), Value: harness.Frame(id, good)},
	}
	if sent, err := harness.Produce(ctx, env, topic, produceSeq(records)); err != nil || sent != len(records) {
		t.Fatalf("produce to %s: %d of %d delivered: %v", topic, sent, len(records), err)
	}

	name := harness.UniqueName("dlq-fidelity")
	dlq := name + "_dlq"
	conn := dlqConnector(env, name, topic, "dlq.fidelity", map[string]string{
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq, "tasks.max": "1",
	})
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	waitFrontier(t, ctx, f, name, topic, map[int32]int64{0: int64(len(records))})

	msgs, err := harness.Consume(ctx, env, dlq, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Fatalf("the dead-letter topic holds %d messages, want the 3 bad records", len(msgs))
	}
	for _, m := range msgs {
		off, _ := m.Header("__connect.errors.offset")
		i, err := strconv.Atoi(off)
		if err != nil || i < 0 || i > 2 {
			t.Errorf("dead letter with __connect.errors.offset %q, want 0, 1 or 2", off)
			continue
		}
		want := records[i]
		t.Run("offset "+off, func(t *testing.T) {
			checkBytes(t, "key", m.Key, want.Key)
			checkBytes(t, "value", m.Value, want.Value)
			var own []harness.Header
			for _, h := range m.Headers {
				if !strings.HasPrefix(h.Key, "__connect.errors.") {
					own = append(own, h)
				}
			}
			if got, w := headerList(own), headerList(want.HeaderList); got != w {
				t.Errorf("the record's own headers are %s, want %s", got, w)
			}
			if n := len(own); n < len(m.Headers) && !strings.HasPrefix(m.Headers[n].Key, "__connect.errors.") {
				t.Errorf("Connect's headers do not follow the record's own: %s", headerList(m.Headers))
			}
		})
	}
	f.Stop()
}

// checkBytes checks got is want, telling null (nil) apart from empty.
func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
		t.Errorf("%s is %s, want %s", what, showBytes(got), showBytes(want))
	}
}

func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

// headerList renders headers in order, null values as null.
func headerList(hs []harness.Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%q=%s", h.Key, showBytes(h.Value))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
