package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

const dlqSchema = `{"type": "record", "name": "Payment", "namespace": "e2e", "fields": [
	{"name": "id", "type": "long"},
	{"name": "memo", "type": "string"}]}`

// badKinds are the corrupt payloads TestKafkaDeadLetterQueue mixes in.
var badKinds = []string{"bad magic byte", "unknown schema id", "truncated payload"}

// dlqRecord is one produced record and where it landed.
type dlqRecord struct {
	partition int32
	offset    int64
	id        int64  // good records only
	bad       string // the kind of corruption, "" for a good record
	value     []byte
}

// dlqRecords makes n records over partitions, every seventh one corrupt
// (the kinds in turn). Offsets are the records' positions in their
// partition of a new topic.
func dlqRecords(t *testing.T, schemaID int32, n, partitions int) []dlqRecord {
	t.Helper()
	schema := avro.MustParse(dlqSchema)
	next := make([]int64, partitions)
	out := make([]dlqRecord, n)
	for i := range out {
		p := int32(i % partitions)
		r := dlqRecord{partition: p, offset: next[p], id: int64(i)}
		next[p]++
		payload, err := avro.Marshal(schema, map[string]any{"id": int64(i), "memo": "payment " + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		r.value = harness.Frame(schemaID, payload)
		if i%7 == 3 {
			r.bad = badKinds[(i/7)%len(badKinds)]
			switch r.bad {
			case "bad magic byte":
				r.value[0] = 7
			case "unknown schema id":
				r.value = harness.Frame(2_000_000_000+int32(i), payload)
			case "truncated payload":
				r.value = r.value[:len(r.value)-4]
			}
		}
		out[i] = r
	}
	return out
}

func produceDLQRecords(ctx context.Context, t *testing.T, env harness.Env, topic string, records []dlqRecord) {
	t.Helper()
	rs := make([]harness.Record, len(records))
	for i, r := range records {
		rs[i] = harness.Record{Partition: r.partition, Value: r.value, Key: []byte(strconv.Itoa(i))}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if sent, err := harness.Produce(ctx, env, topic, produceSeq(rs)); err != nil || sent != len(rs) {
		t.Fatalf("produce to %s: %d of %d delivered: %v", topic, sent, len(rs), err)
	}
}

// TestKafkaDeadLetterQueue mixes corrupt payloads (a bad magic byte, an
// unknown schema id, a truncated Avro payload) among good records. With
// errors.tolerance=all and a dead-letter topic, every good record must be
// in the table exactly once, every bad one in the dead-letter topic with
// its original bytes and Kafka Connect's __connect.errors.* headers
// (topic, partition, offset, stage, exception message), and the status
// and /metrics must count them. With errors.tolerance=none the task must
// fail with a trace naming the bad record's topic, partition and offset.
func TestKafkaDeadLetterQueue(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Readers)
	ctx := harness.Context(t, 10*time.Minute)
	d := newDLQInput(t, ctx, env)
	f := harness.StartFloe(t, env, harness.Options{})

	t.Run("tolerance all", func(t *testing.T) {
		checkDeadLetters(t, ctx, env, f, d, nil)
	})

	t.Run("tolerance none fails naming the record", func(t *testing.T) {
		f.Restart()
		topic2 := harness.UniqueName("e2e_strict")
		if err := harness.CreateTopic(ctx, env, topic2, 1); err != nil {
			t.Fatal(err)
		}
		id2, err := harness.RegisterSchema(ctx, env, topic2+"-value", dlqSchema)
		if err != nil {
			t.Fatal(err)
		}
		// Three good records, then a bad magic byte at offset 3.
		rs := dlqRecords(t, id2, 4, 1)
		rs[3].value[0] = 9
		produceDLQRecords(ctx, t, env, topic2, rs)
		name := "payments-strict"
		conn := dlqConnector(env, name, topic2, "dlq.strict", map[string]string{"errors.tolerance": "none", "tasks.max": "1"})
		if _, err := f.API.CreateConnector(ctx, conn); err != nil {
			t.Fatal(err)
		}
		st := f.WaitStatus(ctx, name, "the task FAILED", true, func(s harness.ConnectorStatus) bool {
			// The restart policy's note follows the failure within a tick.
			return len(s.Tasks) > 0 && s.Tasks[0].State == "FAILED" && strings.Contains(s.Tasks[0].Trace, "floe ")
		})
		trace := st.Tasks[0].Trace
		// A bad record is permanent: the restart policy leaves it for a
		// human rather than reading it again in a loop.
		for _, want := range []string{topic2, "partition 0", "offset 3", "floe does not restart it"} {
			if !strings.Contains(trace, want) {
				t.Errorf("the FAILED task's trace does not name %q:\n%s", want, trace)
			}
		}
		if code, _, err := f.API.Restart(ctx, name, true, true); err != nil || code != http.StatusAccepted {
			t.Errorf("restart?includeTasks&onlyFailed of the failed connector: %d %v", code, err)
		}
		f.Stop()
	})
}

func headerKeys(m harness.Message) []string {
	var out []string
	for _, h := range m.Headers {
		out = append(out, h.Key)
	}
	slices.Sort(out)
	return out
}

// dlqInput is a topic of good and bad records (dlqRecords) with its
// schema registered.
type dlqInput struct {
	topic     string
	bad, good []dlqRecord
}

func newDLQInput(t *testing.T, ctx context.Context, env harness.Env) dlqInput {
	t.Helper()
	const partitions, n = 3, 2100
	d := dlqInput{topic: harness.UniqueName("e2e_payments")}
	if err := harness.CreateTopic(ctx, env, d.topic, partitions); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, d.topic+"-value", dlqSchema)
	if err != nil {
		t.Fatal(err)
	}
	records := dlqRecords(t, id, n, partitions)
	produceDLQRecords(ctx, t, env, d.topic, records)
	for _, r := range records {
		if r.bad != "" {
			d.bad = append(d.bad, r)
		} else {
			d.good = append(d.good, r)
		}
	}
	return d
}

// dlqConnector is a kafka → iceberg connector of topic into table.
func dlqConnector(env harness.Env, name, topic, table string, extra map[string]string) harness.Connector {
	c := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":         "iceberg",
		"source":                  "kafka",
		"topics":                  topic,
		"kafka.bootstrap.servers": env.KafkaBootstrap,
		"schema.registry.url":     env.SchemaRegistryURL,
		"tasks.max":               "2",
		"commit.interval.ms":      "1000",
		"iceberg.tables":          table,
		// The corrupt records carry ids no registry will know: dead-letter
		// them at once rather than waiting for each (plugins/kafka tests
		// the wait).
		"schema.registry.unknown.timeout.ms": "0",
	}}
	return withConfig(c, extra)
}

// checkDeadLetters runs d's topic with errors.tolerance=all into a new
// table (on the lake when stack is set, else the embedded catalog), then
// checks the dead-letter topic holds each bad
// record once with its bytes and Connect's headers, the status and
// /metrics count them, and the table holds each good record once
// (PyIceberg). It stops f.
func checkDeadLetters(t *testing.T, ctx context.Context, env harness.Env, f *harness.Floe, d dlqInput, stack *lakeStack) {
	t.Helper()
	topic, bad, good := d.topic, d.bad, d.good
	name := harness.UniqueName("payments-dlq")
	dlq := name + "_dlq"
	namespace := "dlq"
	if stack != nil {
		namespace = harness.UniqueName("dlq")
	}
	table := namespace + ".payments"
	conn := dlqConnector(env, name, topic, table, map[string]string{
		"errors.tolerance":                  "all",
		"errors.deadletterqueue.topic.name": dlq,
	})
	if stack != nil {
		maps.Copy(conn.Config, stack.keys(namespace))
	}
	if _, err := f.API.CreateConnector(ctx, conn); err != nil {
		t.Fatal(err)
	}
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitFrontier(t, ctx, f, name, topic, ends)
	st, err := f.API.Status(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Floe == nil || st.Floe.DeadLetters != int64(len(bad)) {
		t.Errorf("status counts %v dead letters, %d records were bad: %s", st.Floe, len(bad), st.Summary())
	}
	m, err := f.API.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Sum("floe_dead_letters_total", `connector="`+name+`"`); v != float64(len(bad)) {
		t.Errorf("/metrics floe_dead_letters_total{connector=%q} = %v, want %d", name, v, len(bad))
	}

	msgs, err := harness.Consume(ctx, env, dlq, len(bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != len(bad) {
		t.Errorf("the dead-letter topic holds %d messages, %d records were bad", len(msgs), len(bad))
	}
	byPos := map[string]dlqRecord{}
	for _, r := range bad {
		byPos[fmt.Sprintf("%d/%d", r.partition, r.offset)] = r
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		h := func(k string) string { v, _ := m.Header(k); return v }
		pos := h("__connect.errors.partition") + "/" + h("__connect.errors.offset")
		r, ok := byPos[pos]
		switch {
		case h("__connect.errors.topic") != topic:
			t.Errorf("dead letter %d/%d: __connect.errors.topic %q, want %q", m.Partition, m.Offset, h("__connect.errors.topic"), topic)
		case !ok:
			t.Errorf("dead letter %d/%d names partition/offset %q, which was not a bad record (headers %v)", m.Partition, m.Offset, pos, headerKeys(m))
		case seen[pos]:
			t.Errorf("record %s is in the dead-letter topic twice", pos)
		default:
			seen[pos] = true
			if !bytes.Equal(m.Value, r.value) {
				t.Errorf("dead letter of %s (%s): value %x, the record's was %x", pos, r.bad, m.Value, r.value)
			}
			msg := h("__connect.errors.exception.message")
			if msg == "" || !strings.Contains(msg, topic) || h("__connect.errors.stage") == "" {
				t.Errorf("dead letter of %s (%s): stage %q, exception message %q; want a stage and a message naming the record", pos, r.bad, h("__connect.errors.stage"), msg)
			}
		}
	}
	if len(seen) != len(bad) {
		t.Errorf("%d of %d bad records reached the dead-letter topic", len(seen), len(bad))
	}
	f.Stop()

	var idSum big.Int
	var offsets int64
	for _, r := range good {
		idSum.Add(&idSum, big.NewInt(r.id))
		offsets += r.offset
	}
	ref := harness.EmbeddedTable(f.DataDir, table)
	if stack != nil {
		ref = stack.table(table)
	}
	py := harness.ReadTable(t, env, harness.PyIceberg, ref, harness.ReadOptions{
		ChecksumCols: []string{"id", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	})
	if py.Rows != int64(len(good)) || py.Distinct == nil || *py.Distinct != py.Rows {
		t.Errorf("%s: %d rows, %v distinct positions; want the %d good records once each", table, py.Rows, deref(py.Distinct), len(good))
	}
	checkChecksums(t, py, map[string]string{"id": idSum.String(), "_source_offset": strconv.FormatInt(offsets, 10)})
}
