package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
	"github.com/floehq/floe/sdk"
)

// Tests in this file run against the real Kafka and Schema Registry of
// e2e/services/up, and skip without them (kafkatest.Services).

// orderRecords produces, per partition, runs of the four order schema
// versions (and v1 again, as an old producer would) and returns them.
func orderRecords(t testing.TB, os orderSchemas, partitions, perPartition int) []kafkatest.Record {
	var recs []kafkatest.Record
	for p := range partitions {
		for i := range perPartition {
			v := min(i*5/perPartition, 4) % 4 // v1 v2 v3 v4 v1
			id := int64(p*1_000_000 + i)
			recs = append(recs, kafkatest.Record{
				Partition: int32(p), Key: []byte(fmt.Sprintf("k%d", id)), Value: os.order(t, v, id),
				Headers: []ckafka.Header{{Key: "version", Value: []byte{byte('1' + v)}}},
			})
		}
	}
	return recs
}

// checkOrders checks every produced order arrived once, with its values
// and its schema version.
func checkOrders(t *testing.T, l *ledger, os orderSchemas, topic string, partitions, perPartition int) {
	t.Helper()
	distinct, dups := l.rows()
	if distinct != partitions*perPartition || dups != 0 {
		t.Fatalf("%d distinct rows and %d duplicates; want %d and none", distinct, dups, partitions*perPartition)
	}
	bad := 0
	for p := range partitions {
		for i := range perPartition {
			v := min(i*5/perPartition, 4) % 4
			id := int64(p*1_000_000 + i)
			got := l.value(fmt.Sprintf("%s/%d", topic, p), int64(i))
			qty := id % 1000
			if v >= 2 {
				qty *= 1_000_000_000
			}
			want := map[string]string{"id": fmt.Sprint(id), "qty": fmt.Sprint(qty), sdk.ColumnKey: fmt.Sprintf("k%d", id)}
			wantName := fmt.Sprintf(`"name":"c-%d"`, id)
			problem := ""
			for k, w := range want {
				if got[k] != w {
					problem += fmt.Sprintf(" %s=%v (want %s)", k, got[k], w)
				}
			}
			if !strings.Contains(fmt.Sprint(got["customer"]), wantName) {
				problem += fmt.Sprintf(" customer=%v (want %s)", got["customer"], wantName)
			}
			if got["__schema"] != int64(os.ids[v]) {
				problem += fmt.Sprintf(" schema=%v (want v%d = %d)", got["__schema"], v+1, os.ids[v])
			}
			if problem != "" {
				bad++
				if bad <= 10 {
					t.Errorf("%s/%d offset %d:%s", topic, p, i, problem)
				}
			}
		}
	}
}

// checkAdmitted checks a host admitted each schema at most once, and only
// the given ones.
func checkAdmitted(t *testing.T, h *fakeHost, ids []int32) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, n := range h.admitCalls {
		if n != 1 {
			t.Errorf("host %s: AdmitSchema(%d) called %d times, want once", h.name, id, n)
		}
		if !slices.Contains(ids, int32(id)) {
			t.Errorf("host %s: AdmitSchema(%d), a schema the test did not register", h.name, id)
		}
	}
}

// Six partitions, four schema versions (a nested field added, int widened
// to long, a field made optional), two tasks in one group: every record
// arrives exactly once with its values, batches chain, and each schema is
// admitted once per task before its first batch.
func TestTwoTasksReadEveryRecordOnce(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("orders")
	createTopic(t, env, topic, 6)
	os := registerOrders(t, env, topic+"-value")
	const per = 500
	produce(t, env, topic, 0, orderRecords(t, os, 6, per))

	l := newLedger(t)
	cfg := baseConfig(env, topic)
	hosts := []*fakeHost{newFakeHost(l, "a"), newFakeHost(l, "b")}
	var runners []*runner
	for i, h := range hosts {
		task := openTask(t, "orders", i, 2, h, cfg)
		defer closeTask(t, task)
		runners = append(runners, startRunner(t, task, h))
	}
	ok := l.waitFor(2*time.Minute, func() bool {
		n, _ := l.rows()
		return n >= 6*per || runners[0].failed() != nil || runners[1].failed() != nil
	})
	for _, r := range runners {
		if err := r.halt(); err != nil {
			t.Fatalf("task %s: %v", r.host.name, err)
		}
	}
	if !ok {
		n, _ := l.rows()
		t.Fatalf("only %d of %d records within 2 minutes", n, 6*per)
	}
	checkOrders(t, l, os, topic, 6, per)
	for _, h := range hosts {
		checkAdmitted(t, h, os.ids[:])
		if d := h.deadLetters(); len(d) > 0 {
			t.Errorf("host %s: %d dead letters, first %s", h.name, len(d), d[0].Reason)
		}
	}
	if l.skipped != 0 {
		t.Errorf("%d records skipped", l.skipped)
	}
}

// describeGroup returns the group's members and their partitions.
func describeGroup(t *testing.T, env kafkatest.Env, group string) (ckafka.ConsumerGroupState, map[string][]string) {
	t.Helper()
	admin, err := ckafka.NewAdminClient(&ckafka.ConfigMap{"bootstrap.servers": env.Bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := admin.DescribeConsumerGroups(ctx, []string{group})
	if err != nil {
		t.Fatalf("describe group %s: %v", group, err)
	}
	d := res.ConsumerGroupDescriptions[0]
	members := map[string][]string{}
	for _, m := range d.Members {
		var parts []string
		for _, tp := range m.Assignment.TopicPartitions {
			parts = append(parts, fmt.Sprintf("%s/%d", *tp.Topic, tp.Partition))
		}
		members[m.ClientID] = parts
	}
	return d.State, members
}

// Task A reads alone; task B joins and, under the cooperative protocol, A
// gives up only some partitions (telling the host where each stops) and
// keeps reading the others; then B leaves and A takes them back where B
// stopped. Records keep being produced throughout: none is lost or read
// twice.
func TestCooperativeRebalance(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("rebalance")
	createTopic(t, env, topic, 6)
	os := registerOrders(t, env, topic+"-value")
	cfg := baseConfig(env, topic)
	l := newLedger(t)

	var produced int
	wave := func(n int) {
		var recs []kafkatest.Record
		for i := range n {
			id := int64(produced + i)
			recs = append(recs, kafkatest.Record{Partition: int32(id % 6), Value: os.order(t, 0, id)})
		}
		produce(t, env, topic, 0, recs)
		produced += n
	}
	waitRows := func(what string, r ...*runner) {
		t.Helper()
		ok := l.waitFor(time.Minute, func() bool {
			n, _ := l.rows()
			for _, x := range r {
				if x.failed() != nil {
					return true
				}
			}
			return n >= produced
		})
		for _, x := range r {
			if err := x.failed(); err != nil {
				t.Fatalf("%s: task %s: %v", what, x.host.name, err)
			}
		}
		if n, _ := l.rows(); !ok {
			t.Fatalf("%s: %d of %d records within a minute", what, n, produced)
		}
	}

	hostA := newFakeHost(l, "a")
	taskA := openTask(t, "rebalance", 0, 2, hostA, cfg)
	defer closeTask(t, taskA)
	runA := startRunner(t, taskA, hostA)
	wave(1200)
	waitRows("A alone", runA)

	// A stops reading, so records it buffered are not handed on when B
	// joins: they must be dropped and read again by B, from where A
	// reported its partitions stopped.
	if err := runA.halt(); err != nil {
		t.Fatalf("task a: %v", err)
	}
	wave(1500)
	hostB := newFakeHost(l, "b")
	taskB := openTask(t, "rebalance", 1, 2, hostB, cfg)
	runB := startRunner(t, taskB, hostB)
	if !l.waitFor(time.Minute, func() bool {
		return len(taskB.buf.assigned()) > 0 && len(taskA.buf.assigned())+len(taskB.buf.assigned()) == 6
	}) {
		t.Fatalf("B got no partitions within a minute (A has %d)", len(taskA.buf.assigned()))
	}
	runA = startRunner(t, taskA, hostA)
	// Produce while both read.
	for range 3 {
		wave(300)
		time.Sleep(200 * time.Millisecond)
	}
	waitRows("A and B", runA, runB)
	wave(1200) // while B owns some partitions
	waitRows("A and B owning partitions", runA, runB)
	hostB.mu.Lock()
	rowsB := hostB.rows
	hostB.mu.Unlock()
	if rowsB == 0 {
		t.Fatalf("B read nothing while it owned %d partitions", len(taskB.buf.assigned()))
	}
	revoked := map[string]bool{}
	for _, r := range hostA.revocations() {
		for p := range r {
			revoked[p] = true
		}
	}
	kept := len(taskA.buf.assigned())
	if len(revoked) == 0 || len(revoked) == 6 || kept == 0 {
		t.Fatalf("A gave up %d partitions and kept %d; the cooperative protocol moves only some", len(revoked), kept)
	}
	state, members := describeGroup(t, env, cfg[KeyConsumerGroupID])
	t.Logf("group %s with B: state %s, members %v; A revoked %v", cfg[KeyConsumerGroupID], state, members, revoked)
	if len(members) != 2 {
		t.Errorf("the group has %d members, want 2", len(members))
	}

	// B leaves: its partitions go back to A, which resumes where B stopped.
	// B is a static member, yet its close leaves the group: A has them
	// well before the session timeout (10 s) would have passed.
	if err := runB.halt(); err != nil {
		t.Fatalf("task b: %v", err)
	}
	closed := time.Now()
	closeTask(t, taskB)
	if !l.waitFor(time.Minute, func() bool { return len(taskA.buf.assigned()) == 6 }) {
		t.Fatalf("A did not get all partitions back within a minute (has %d)", len(taskA.buf.assigned()))
	}
	if took := time.Since(closed); took > 6*time.Second {
		t.Errorf("A got B's partitions %s after B closed; a member that leaves on close hands them on within seconds, not after the session timeout", took.Round(100*time.Millisecond))
	}
	wave(1200)
	waitRows("A after B left", runA)
	if err := runA.halt(); err != nil {
		t.Fatalf("task a: %v", err)
	}
	distinct, dups := l.rows()
	if distinct != produced || dups != 0 {
		t.Fatalf("%d distinct rows, %d duplicates; want %d and none", distinct, dups, produced)
	}
	// Every partition B had must have been started from the host's
	// position when A took it back.
	starts := hostA.starts()
	if len(starts) < 2 {
		t.Errorf("A asked StartPositions %d times; want at least twice (initial, and after B left)", len(starts))
	}
}

// A task left unread pauses its partitions once its buffer is full, keeps
// polling so it stays in the group (longer than its session timeout and
// max poll interval), and resumes when read again; nothing is lost.
func TestBackpressurePausesWithoutLeavingTheGroup(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("backpressure")
	createTopic(t, env, topic, 3)
	os := registerOrders(t, env, topic+"-value")
	const n = 30_000
	var recs []kafkatest.Record
	for i := range n {
		recs = append(recs, kafkatest.Record{Value: os.order(t, 0, int64(i)), Key: make([]byte, 100)})
	}
	produce(t, env, topic, 3, recs)

	cfg := baseConfig(env, topic)
	cfg[KeyBufferMaxBytes] = "262144"
	cfg["kafka.session.timeout.ms"] = "6000"
	cfg["kafka.heartbeat.interval.ms"] = "1000"
	cfg["kafka.max.poll.interval.ms"] = "7000"
	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "backpressure", 0, 1, h, cfg)
	defer closeTask(t, task)

	deadline := time.Now().Add(30 * time.Second)
	for !task.paused.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("not paused within 30 s; buffer holds %d bytes", task.buf.size())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Longer than the session timeout and the max poll interval.
	time.Sleep(10 * time.Second)
	if size := task.buf.size(); size > 262144+pollBurst*400 {
		t.Errorf("the buffer holds %d bytes, far over buffer.max.bytes=262144", size)
	}
	state, members := describeGroup(t, env, cfg[KeyConsumerGroupID])
	if len(members) != 1 || state != ckafka.ConsumerGroupStateStable {
		t.Errorf("while paused the group is %s with members %v; want Stable with our member", state, members)
	}
	for _, parts := range members {
		if len(parts) != 3 {
			t.Errorf("while paused the member owns %v; want all 3 partitions", parts)
		}
	}
	if len(h.revocations()) != 0 {
		t.Errorf("partitions were revoked while paused: %v", h.revocations())
	}
	if !task.paused.Load() {
		t.Errorf("resumed without being read")
	}

	r := startRunner(t, task, h)
	ok := l.waitFor(2*time.Minute, func() bool { rows, _ := l.rows(); return rows >= n || r.failed() != nil })
	if err := r.halt(); err != nil {
		t.Fatal(err)
	}
	distinct, dups := l.rows()
	if !ok || distinct != n || dups != 0 {
		t.Fatalf("%d distinct rows, %d duplicates; want %d and none", distinct, dups, n)
	}
	if task.paused.Load() {
		t.Errorf("still paused after everything was read")
	}
	t.Logf("paused %d times", task.pauses.Load())
	if len(h.revocations()) != 0 {
		t.Errorf("partitions were revoked: %v", h.revocations())
	}
}

// Corrupt payloads (bad magic byte, unknown schema id, truncated payload,
// trailing bytes) go to the dead-letter queue with stage deserialize and a
// reason naming topic, partition and offset; batches count them as skipped
// and still chain; the good records around them arrive.
func TestCorruptRecordsAreDeadLettered(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("corrupt")
	createTopic(t, env, topic, 1)
	os := registerOrders(t, env, topic+"-value")
	good := func(i int64) kafkatest.Record { return kafkatest.Record{Value: os.order(t, 0, i)} }
	truncated := os.order(t, 0, 999)
	truncated = truncated[:len(truncated)-3]
	recs := []kafkatest.Record{
		good(0),
		{Value: []byte(`{"id": 1}`)}, // 1: bad magic
		good(2),
		{Value: kafkatest.Frame(2_000_000_000, []byte{2})}, // 3: unknown schema id
		good(4),
		{Value: truncated}, // 5: truncated
		good(6),
		{Value: append(os.order(t, 0, 7), 0, 0)}, // 7: trailing bytes
		good(8),
		{Value: nil, Key: []byte("gone")}, // 9: tombstone
		good(10),
	}
	produce(t, env, topic, 0, recs)
	l := newLedger(t)
	h := newFakeHost(l, "a")
	cfg := baseConfig(env, topic)
	cfg[KeyRegistryUnknownTimeout] = "0" // dead-letter the unknown id at once
	task := openTask(t, "corrupt", 0, 1, h, cfg)
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	ok := l.waitFor(time.Minute, func() bool { return l.positions()[topic+"/0"] >= 11 || r.failed() != nil })
	if err := r.halt(); err != nil || !ok {
		t.Fatalf("did not reach offset 11: %v (positions %v)", err, l.positions())
	}
	distinct, dups := l.rows()
	if distinct != 6 || dups != 0 || l.skipped != 5 {
		t.Errorf("%d rows (%d dups), %d skipped; want 6 rows and 5 skipped", distinct, dups, l.skipped)
	}
	want := map[int64]string{1: "bad magic byte", 3: "schema not found", 5: "truncated", 7: "trailing bytes", 9: "tombstone"}
	letters := h.deadLetters()
	if len(letters) != len(want) {
		t.Fatalf("%d dead letters, want %d: %v", len(letters), len(want), letters)
	}
	for _, d := range letters {
		prefix := fmt.Sprintf("topic %s partition 0 offset %d: ", topic, d.Offset)
		if d.Stage != stageDeserialize || !strings.HasPrefix(d.Reason, prefix) || !strings.Contains(d.Reason, want[d.Offset]) {
			t.Errorf("dead letter at %d: stage %q reason %q; want stage deserialize and a reason starting %q that mentions %q",
				d.Offset, d.Stage, d.Reason, prefix, want[d.Offset])
		}
	}
}

// With errors.tolerance=none (the host refuses dead letters) Read fails
// with an error naming topic, partition and offset of the bad record.
func TestToleranceNoneFailsTheTask(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("intolerant")
	createTopic(t, env, topic, 1)
	os := registerOrders(t, env, topic+"-value")
	produce(t, env, topic, 0, []kafkatest.Record{{Value: os.order(t, 0, 0)}, {Value: []byte("garbage")}})
	l := newLedger(t)
	h := newFakeHost(l, "a")
	h.refuse = fmt.Errorf("dead letter refused: errors.tolerance is none")
	task := openTask(t, "intolerant", 0, 1, h, baseConfig(env, topic))
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	<-r.done
	want := fmt.Sprintf("topic %s partition 0 offset 1", topic)
	if r.err == nil || !strings.Contains(r.err.Error(), want) || !strings.Contains(r.err.Error(), "errors.tolerance is none") {
		t.Fatalf("Read failed with %v; want an error naming %q and the refusal", r.err, want)
	}
}

// A schema the host rejects sends its records to the dead-letter queue
// with stage schema and the rejection; other schemas' records flow, and
// the rejected schema is asked about once.
func TestRejectedSchemaIsDeadLettered(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("rejected")
	createTopic(t, env, topic, 1)
	os := registerOrders(t, env, topic+"-value")
	var recs []kafkatest.Record
	for i := range 40 {
		recs = append(recs, kafkatest.Record{Value: os.order(t, i/10%2, int64(i))}) // 10 v1, 10 v2, …
	}
	produce(t, env, topic, 0, recs)
	l := newLedger(t)
	h := newFakeHost(l, "a")
	h.reject = func(s sdk.Schema) error {
		if s.ID == int64(os.ids[1]) {
			return sdk.RejectSchema("column customer.tier: the table cannot take it")
		}
		return nil
	}
	task := openTask(t, "rejected", 0, 1, h, baseConfig(env, topic))
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	ok := l.waitFor(time.Minute, func() bool { return l.positions()[topic+"/0"] >= 40 || r.failed() != nil })
	if err := r.halt(); err != nil || !ok {
		t.Fatalf("did not reach offset 40: %v", err)
	}
	if distinct, _ := l.rows(); distinct != 20 || l.skipped != 20 {
		t.Errorf("%d rows, %d skipped; want 20 and 20", distinct, l.skipped)
	}
	for _, d := range h.deadLetters() {
		if d.Stage != stageSchema || !strings.Contains(d.Reason, "column customer.tier") || !strings.Contains(d.Reason, fmt.Sprintf("offset %d", d.Offset)) {
			t.Errorf("dead letter at %d: stage %q reason %q", d.Offset, d.Stage, d.Reason)
		}
	}
	if n := h.admitCalls[int64(os.ids[1])]; n != 1 {
		t.Errorf("the rejected schema was asked about %d times, want once", n)
	}
	if s := h.admittedSchema(int64(os.ids[0])); s.Subject != topic+"-value" || s.Avro == "" || s.Arrow == nil {
		t.Errorf("admitted schema %+v; want subject %s-value with its Avro and Arrow schemas", s, topic)
	}
}

// topics.regex reads every topic whose whole name matches, including one
// created after the task started, and no other.
func TestTopicsRegex(t *testing.T) {
	env := kafkatest.Services(t)
	prefix := kafkatest.UniqueName("rx")
	a, b, later, other := prefix+"-a", prefix+"-b", prefix+"-c", prefix+"-a-x"
	for _, topic := range []string{a, b, other} {
		createTopic(t, env, topic, 2)
	}
	os := registerOrders(t, env, prefix+"-orders")
	rec := func(i int) []kafkatest.Record {
		var out []kafkatest.Record
		for j := range 10 {
			out = append(out, kafkatest.Record{Value: os.order(t, 0, int64(i*100+j))})
		}
		return out
	}
	produce(t, env, a, 2, rec(1))
	produce(t, env, b, 2, rec(2))
	produce(t, env, other, 2, rec(3))

	cfg := baseConfig(env)
	delete(cfg, KeyTopics)
	cfg[KeyTopicsRegex] = prefix + "-[a-c]"
	cfg["kafka.topic.metadata.refresh.interval.ms"] = "1000"
	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "regex", 0, 1, h, cfg)
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	if !l.waitFor(time.Minute, func() bool { n, _ := l.rows(); return n >= 20 || r.failed() != nil }) {
		t.Fatalf("the matching topics were not read")
	}
	createTopic(t, env, later, 1)
	produce(t, env, later, 1, rec(4))
	ok := l.waitFor(time.Minute, func() bool { n, _ := l.rows(); return n >= 30 || r.failed() != nil })
	if err := r.halt(); err != nil || !ok {
		t.Fatalf("the topic created later was not read: %v (positions %v)", err, l.positions())
	}
	time.Sleep(time.Second)
	for p := range l.positions() {
		if strings.HasPrefix(p, other+"/") {
			t.Errorf("read %s, which does not match the whole pattern", p)
		}
	}
	if n, dups := l.rows(); n != 30 || dups != 0 {
		t.Errorf("%d rows (%d dups), want 30", n, dups)
	}
}

// With the registry down, records are not dead-lettered: Read retries and
// fails after schema.registry.retry.timeout.ms with the registry's URL.
func TestRegistryDownFailsAfterRetries(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("noregistry")
	createTopic(t, env, topic, 1)
	produce(t, env, topic, 0, []kafkatest.Record{{Value: kafkatest.Frame(1, []byte{2})}})
	cfg := baseConfig(env, topic)
	cfg[KeyRegistryURL] = "http://127.0.0.1:1/apis/ccompat/v7"
	cfg[KeyRegistryRetryTimeout] = "2000"
	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "noregistry", 0, 1, h, cfg)
	defer closeTask(t, task)
	start := time.Now()
	r := startRunner(t, task, h)
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatal("Read did not fail within a minute")
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "http://127.0.0.1:1/apis/ccompat/v7") || !strings.Contains(r.err.Error(), KeyRegistryRetryTimeout) {
		t.Fatalf("Read failed with %v; want the registry URL and %s", r.err, KeyRegistryRetryTimeout)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("failed after %v, before the 2 s retry timeout", took)
	}
	if d := h.deadLetters(); len(d) != 0 {
		t.Errorf("%d records dead-lettered for a registry outage", len(d))
	}
}

// SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, when the
// services run with --sasl.
func TestSASL(t *testing.T) {
	env := kafkatest.Services(t)
	if env.SASLBootstrap == "" {
		t.Skip("skipped: no SASL listener (start the services with e2e/services/up --sasl)")
	}
	topic := kafkatest.UniqueName("sasl")
	createTopic(t, env, topic, 2)
	os := registerOrders(t, env, topic+"-value")
	var recs []kafkatest.Record
	for i := range 50 {
		recs = append(recs, kafkatest.Record{Value: os.order(t, 0, int64(i))})
	}
	produce(t, env, topic, 2, recs)
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			cfg := baseConfig(env, topic)
			cfg[KeyBootstrapServers] = env.SASLBootstrap
			cfg[KeySecurityProtocol] = "SASL_PLAINTEXT"
			cfg[KeySASLMechanisms] = mech
			cfg[KeySASLUsername] = env.SASLUser
			cfg[KeySASLPassword] = env.SASLPassword
			l := newLedger(t)
			h := newFakeHost(l, "a")
			task := openTask(t, "sasl", 0, 1, h, cfg)
			defer closeTask(t, task)
			r := startRunner(t, task, h)
			ok := l.waitFor(time.Minute, func() bool { n, _ := l.rows(); return n >= 50 || r.failed() != nil })
			if err := r.halt(); err != nil || !ok {
				n, _ := l.rows()
				t.Fatalf("read %d of 50 records over SASL %s: %v", n, mech, err)
			}
		})
	}
	// A wrong password is no outage: the task fails at once, marked
	// permanent, naming the key to fix, instead of waiting forever.
	t.Run("wrong password", func(t *testing.T) {
		cfg := baseConfig(env, topic)
		cfg[KeyBootstrapServers] = env.SASLBootstrap
		cfg[KeySecurityProtocol] = "SASL_PLAINTEXT"
		cfg[KeySASLMechanisms] = "SCRAM-SHA-256"
		cfg[KeySASLUsername] = env.SASLUser
		cfg[KeySASLPassword] = env.SASLPassword + "-wrong"
		l := newLedger(t)
		h := newFakeHost(l, "a")
		task := openTask(t, "sasl-wrong", 0, 1, h, cfg)
		defer closeTask(t, task)
		start := time.Now()
		r := startRunner(t, task, h)
		l.waitFor(30*time.Second, func() bool { return r.failed() != nil })
		err := r.halt()
		if err == nil {
			t.Fatal("a task with a wrong SASL password still runs after 30 s")
		}
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
		if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), KeySASLPassword) ||
			!strings.Contains(err.Error(), "refused the consumer's credentials") {
			t.Fatalf("the task failed with %v; want a permanent error saying the brokers refused the credentials, naming %s", err, KeySASLPassword)
		}
		if strings.Contains(err.Error(), cfg[KeySASLPassword]) {
			t.Fatalf("the error shows the password: %v", err)
		}
		if n, _ := l.rows(); n != 0 {
			t.Fatalf("read %d records with a wrong password", n)
		}
	})
}

// Commit writes the positions to the consumer group (partitions the task
// does not own are left out), and a task the host has no positions for
// starts from the group's committed offsets.
func TestCommitAndStartFromGroupOffsets(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("commit")
	createTopic(t, env, topic, 2)
	os := registerOrders(t, env, topic+"-value")
	var recs []kafkatest.Record
	for i := range 200 {
		recs = append(recs, kafkatest.Record{Value: os.order(t, 0, int64(i))})
	}
	produce(t, env, topic, 2, recs)
	cfg := baseConfig(env, topic)

	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "commit", 0, 1, h, cfg)
	r := startRunner(t, task, h)
	ok := l.waitFor(time.Minute, func() bool { n, _ := l.rows(); return n >= 200 || r.failed() != nil })
	if err := r.halt(); err != nil || !ok {
		t.Fatalf("read: %v", err)
	}
	// As if the sink held 60 and 70 records of the two partitions.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p0, p1 := topic+"/0", topic+"/1"
	if err := task.Commit(ctx, map[string]int64{p0: 60, p1: 70, "elsewhere/0": 5}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	closeTask(t, task)

	admin, err := ckafka.NewAdminClient(&ckafka.ConfigMap{"bootstrap.servers": env.Bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	res, err := admin.ListConsumerGroupOffsets(ctx, []ckafka.ConsumerGroupTopicPartitions{{Group: cfg[KeyConsumerGroupID]}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
		got[fmt.Sprintf("%s/%d", *tp.Topic, tp.Partition)] = int64(tp.Offset)
	}
	if len(got) != 2 || got[p0] != 60 || got[p1] != 70 {
		t.Fatalf("group offsets %v; want %s at 60 and %s at 70 only", got, p0, p1)
	}

	// A new task whose host knows nothing resumes from the group.
	l2 := newLedger(t)
	h2 := newFakeHost(l2, "b")
	task2 := openTask(t, "commit", 0, 1, h2, cfg)
	defer closeTask(t, task2)
	r2 := startRunner(t, task2, h2)
	ok = l2.waitFor(time.Minute, func() bool { n, _ := l2.rows(); return n >= 70 || r2.failed() != nil })
	if err := r2.halt(); err != nil || !ok {
		t.Fatalf("read after restart: %v", err)
	}
	if n, dups := l2.rows(); n != 70 || dups != 0 {
		t.Errorf("%d rows (%d dups) after the restart; want the 70 after the group's offsets", n, dups)
	}
	for p, from := range map[string]int64{p0: 60, p1: 70} {
		for off := range l2.seen[p] {
			if off < from {
				t.Errorf("%s: read offset %d, before the group's offset %d", p, off, from)
			}
		}
	}
}

// A schema floe cannot turn into columns (a recursive record) is the
// schema's fault: its records are dead-lettered with stage schema, and the
// task goes on.
func TestUnreadableSchemaIsDeadLettered(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("recursive")
	createTopic(t, env, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const list = `{"type":"record","name":"Node","namespace":"floe.test","fields":[
		{"name":"v","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}`
	id, err := kafkatest.Register(ctx, env.RegistryURL, topic+"-value", list)
	if err != nil {
		t.Fatal(err)
	}
	os := registerOrders(t, env, topic+"-orders")
	produce(t, env, topic, 0, []kafkatest.Record{
		{Value: kafkatest.Frame(id, []byte{2, 0})},
		{Value: os.order(t, 0, 1)},
	})
	l := newLedger(t)
	h := newFakeHost(l, "a")
	task := openTask(t, "recursive", 0, 1, h, baseConfig(env, topic))
	defer closeTask(t, task)
	r := startRunner(t, task, h)
	ok := l.waitFor(time.Minute, func() bool { return l.positions()[topic+"/0"] >= 2 || r.failed() != nil })
	if err := r.halt(); err != nil || !ok {
		t.Fatalf("did not reach offset 2: %v", err)
	}
	d := h.deadLetters()
	if len(d) != 1 || d[0].Offset != 0 || d[0].Stage != stageSchema || !strings.Contains(d[0].Reason, "ecursive") {
		t.Fatalf("dead letters %+v; want offset 0 with stage schema naming the recursion", d)
	}
	// The registry answered, so the reason is the schema's: it names the
	// id once and not the registry.
	if strings.Contains(d[0].Reason, env.RegistryURL) || strings.Count(d[0].Reason, fmt.Sprintf("schema id %d", id)) != 1 {
		t.Errorf("reason %q: want the schema id once and no registry URL (%s)", d[0].Reason, env.RegistryURL)
	}
	if n, _ := l.rows(); n != 1 {
		t.Errorf("%d rows, want the one order", n)
	}
}
