package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/hamba/avro/v2"
	"github.com/riferrei/srclient"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// unitTask is a task without a consumer: records go straight into its
// buffer, and its schema cache knows the given schemas (no registry).
func unitTask(t *testing.T, host sdk.SourceHost, set settings, known map[int32]string) (*task, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	tk := &task{
		log: testLogger(t), host: host, set: set, buf: newBuffer(set.batchSize, set.linger),
		mem: mem, epoch: time.Now(),
	}
	tk.schemas = &schemaCache{host: host, log: tk.log, mem: mem, byID: map[int32]*valueSchema{}, now: time.Now}
	for id, text := range known {
		dec, err := schemas.NewDecoder(avro.MustParse(text))
		if err != nil {
			t.Fatal(err)
		}
		tk.schemas.byID[id] = newValueSchema(mem, id, dec)
		if fh, ok := host.(*fakeHost); ok {
			fh.admitted[int64(id)] = sdk.Schema{ID: int64(id), Arrow: dec.Schema()}
		}
	}
	t.Cleanup(func() {
		tk.bb.discard()
		tk.schemas.release()
		mem.AssertSize(t, 0)
	})
	return tk, mem
}

const flatSchema = `{"type":"record","name":"Flat","fields":[{"name":"n","type":"long"},{"name":"s","type":"string"}]}`

func flat(t *testing.T, id int32, n int64, s string) []byte {
	t.Helper()
	payload, err := avro.Marshal(avro.MustParse(flatSchema), map[string]any{"n": n, "s": s})
	if err != nil {
		t.Fatal(err)
	}
	return kafkatest.Frame(id, payload)
}

// feed puts values into partition tp's buffer at consecutive offsets from
// first, as the poll loop would.
func feed(tk *task, tp topicPartition, first int64, values ...[]byte) {
	var recs []polled
	for i, v := range values {
		m := &ckafka.Message{
			TopicPartition: ckafka.TopicPartition{Topic: &tp.topic, Partition: tp.partition, Offset: ckafka.Offset(first + int64(i))},
			Value:          v, Key: []byte("k"), Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)), TimestampType: ckafka.TimestampCreateTime,
		}
		if i%2 == 1 {
			m.Headers = []ckafka.Header{{Key: "h", Value: []byte("v")}, {Key: "nil", Value: nil}}
		}
		recs = append(recs, tk.toPolled(m))
	}
	tk.buf.add(recs)
}

func unitSettings() settings {
	return settings{batchSize: 100, linger: 0, maxBytes: 1 << 20, keyFormat: KeyFormatString, nullValues: NullValuesDLQ}
}

func readAll(t *testing.T, tk *task, l *ledger, h *fakeHost) []sdk.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	bs, err := tk.Read(ctx, 10)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	for _, b := range bs {
		if err := l.accept(b, h); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { releaseBatches(bs) })
	return bs
}

// Bad records inside a run are dead-lettered with their stage and a reason
// naming topic, partition and offset; the good ones around them decode
// (the builder is rebuilt after each failure); the batch covers all of
// them and counts the bad ones as skipped.
func TestBatchLeavesBadRecordsOut(t *testing.T) {
	l := newLedger(t)
	h := newFakeHost(l, "unit")
	tk, _ := unitTask(t, h, unitSettings(), map[int32]string{7: flatSchema})
	tp := topicPartition{"orders", 3}
	tk.buf.assign([]topicPartition{tp}, []int64{40})

	good := func(n int64) []byte { return flat(t, 7, n, "x") }
	truncated := good(1)[:7]
	trailing := append(good(2), 0x02)
	feed(tk, tp, 40,
		good(40), good(41),
		[]byte(`{"json":true}`), // bad magic
		truncated,
		good(44),
		trailing,
		[]byte{}, // empty, not null
		nil,      // tombstone
		good(48),
		[]byte{0, 0, 0}, // shorter than the header
		good(50),
	)
	bs := readAll(t, tk, l, h)
	if len(bs) != 1 {
		t.Fatalf("got %d batches, want 1", len(bs))
	}
	b := bs[0]
	if b.From != 40 || b.Next != 51 || b.Skipped != 6 || b.Records.NumRows() != 5 || b.SchemaID != 7 {
		t.Fatalf("batch [%d, %d) skipped %d rows %d schema %d; want [40, 51) skipped 6 rows 5 schema 7",
			b.From, b.Next, b.Skipped, b.Records.NumRows(), b.SchemaID)
	}
	offsets := columnByName(b.Records, sdk.ColumnOffset).(*array.Int64).Int64Values()
	ns := b.Records.Column(0).(*array.Int64).Int64Values()
	for i, want := range []int64{40, 41, 44, 48, 50} {
		if offsets[i] != want || ns[i] != want {
			t.Errorf("row %d: offset %d n %d, want %d", i, offsets[i], ns[i], want)
		}
	}
	headers := columnByName(b.Records, sdk.ColumnHeaders).(*array.Map)
	if !headers.IsNull(0) || headers.IsNull(1) {
		t.Errorf("headers: row 0 (none) null=%v, row 1 (two) null=%v", headers.IsNull(0), headers.IsNull(1))
	}
	want := map[int64][]string{
		42: {stageDeserialize, "bad magic byte"},
		43: {stageDeserialize, "truncated"},
		45: {stageDeserialize, "trailing bytes"},
		46: {stageDeserialize, "empty message"},
		47: {stageDeserialize, "tombstone"},
		49: {stageDeserialize, "truncated"},
	}
	letters := h.deadLetters()
	if len(letters) != len(want) {
		t.Fatalf("%d dead letters, want %d: %+v", len(letters), len(want), letters)
	}
	for _, d := range letters {
		w, ok := want[d.Offset]
		if !ok {
			t.Errorf("unexpected dead letter at offset %d: %s", d.Offset, d.Reason)
			continue
		}
		prefix := "topic orders partition 3 offset " + itoa(d.Offset) + ": "
		if d.Stage != w[0] || !strings.HasPrefix(d.Reason, prefix) || !strings.Contains(d.Reason, w[1]) {
			t.Errorf("dead letter at %d: stage %q reason %q; want stage %q, reason starting %q and mentioning %q", d.Offset, d.Stage, d.Reason, w[0], prefix, w[1])
		}
		if d.Partition != "orders/3" || string(d.Key) != "k" || d.TimestampMs == 0 {
			t.Errorf("dead letter at %d lacks the record's partition, key or timestamp: %+v", d.Offset, d)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A schema change ends the batch; the next batch chains on.
func TestBatchEndsAtSchemaChange(t *testing.T) {
	const other = `{"type":"record","name":"Other","fields":[{"name":"b","type":"boolean"}]}`
	l := newLedger(t)
	h := newFakeHost(l, "unit")
	tk, _ := unitTask(t, h, unitSettings(), map[int32]string{1: flatSchema, 2: other})
	tp := topicPartition{"t", 0}
	tk.buf.assign([]topicPartition{tp}, []int64{0})
	otherRec := func() []byte {
		p, _ := avro.Marshal(avro.MustParse(other), map[string]any{"b": true})
		return kafkatest.Frame(2, p)
	}
	feed(tk, tp, 0, flat(t, 1, 0, "a"), flat(t, 1, 1, "b"), otherRec(), otherRec(), flat(t, 1, 4, "c"))
	bs := readAll(t, tk, l, h)
	var got []string
	for _, b := range bs {
		got = append(got, formatRange(b))
	}
	if strings.Join(got, " ") != "[0,2)#1 [2,4)#2 [4,5)#1" {
		t.Errorf("batches %v, want [0,2)#1 [2,4)#2 [4,5)#1", got)
	}
}

func formatRange(b sdk.Batch) string {
	return "[" + itoa(b.From) + "," + itoa(b.Next) + ")#" + itoa(b.SchemaID)
}

// A batch of only bad records still advances the partition, with no rows.
func TestBatchOfOnlyBadRecords(t *testing.T) {
	l := newLedger(t)
	h := newFakeHost(l, "unit")
	tk, _ := unitTask(t, h, unitSettings(), nil)
	tp := topicPartition{"t", 0}
	tk.buf.assign([]topicPartition{tp}, []int64{10})
	feed(tk, tp, 12, []byte("x"), nil)
	bs := readAll(t, tk, l, h)
	if len(bs) != 1 || bs[0].From != 10 || bs[0].Next != 14 || bs[0].Skipped != 2 || bs[0].Records != nil {
		t.Fatalf("got %+v, want one batch [10, 14) with 2 skipped and no rows", bs)
	}
}

// behavior.on.null.values: ignore counts tombstones as skipped without a
// dead letter; fail fails Read naming the record and its key.
func TestNullValues(t *testing.T) {
	t.Run("ignore", func(t *testing.T) {
		l := newLedger(t)
		h := newFakeHost(l, "unit")
		set := unitSettings()
		set.nullValues = NullValuesIgnore
		tk, _ := unitTask(t, h, set, map[int32]string{1: flatSchema})
		tp := topicPartition{"t", 0}
		tk.buf.assign([]topicPartition{tp}, []int64{0})
		feed(tk, tp, 0, flat(t, 1, 0, "a"), nil, flat(t, 1, 2, "b"))
		bs := readAll(t, tk, l, h)
		if len(bs) != 1 || bs[0].Skipped != 1 || bs[0].Records.NumRows() != 2 || len(h.deadLetters()) != 0 {
			t.Fatalf("got %d batches (skipped %d), %d dead letters; want 1 batch, 2 rows, 1 skipped, no dead letter",
				len(bs), bs[0].Skipped, len(h.deadLetters()))
		}
	})
	t.Run("fail", func(t *testing.T) {
		l := newLedger(t)
		h := newFakeHost(l, "unit")
		set := unitSettings()
		set.nullValues = NullValuesFail
		tk, _ := unitTask(t, h, set, map[int32]string{1: flatSchema})
		tp := topicPartition{"t", 0}
		tk.buf.assign([]topicPartition{tp}, []int64{0})
		feed(tk, tp, 0, flat(t, 1, 0, "a"), nil)
		_, err := tk.Read(context.Background(), 1)
		if err == nil || !strings.Contains(err.Error(), "topic t partition 0 offset 1 key \"k\"") || !strings.Contains(err.Error(), KeyNullValues) {
			t.Fatalf("Read error %v; want one naming topic t partition 0 offset 1 key \"k\" and %s", err, KeyNullValues)
		}
	})
}

// With errors.tolerance=none the host refuses dead letters, and Read fails
// with an error naming the bad record.
func TestDeadLetterRefused(t *testing.T) {
	l := newLedger(t)
	h := newFakeHost(l, "unit")
	h.refuse = errors.New("dead letter refused: errors.tolerance is none")
	tk, _ := unitTask(t, h, unitSettings(), map[int32]string{1: flatSchema})
	tp := topicPartition{"orders", 2}
	tk.buf.assign([]topicPartition{tp}, []int64{0})
	feed(tk, tp, 0, flat(t, 1, 0, "a"), []byte("junk"))
	bs, err := tk.Read(context.Background(), 1)
	if err == nil || len(bs) != 0 {
		t.Fatalf("Read returned %d batches, error %v; want an error", len(bs), err)
	}
	for _, want := range []string{"topic orders partition 2 offset 1", "bad magic byte", "errors.tolerance is none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Read error %q does not mention %q", err, want)
		}
	}
}

// key.format=avro keeps the payload after the Confluent header; a key
// without the header is a bad record.
func TestAvroKeys(t *testing.T) {
	l := newLedger(t)
	h := newFakeHost(l, "unit")
	set := unitSettings()
	set.keyFormat = KeyFormatAvro
	tk, _ := unitTask(t, h, set, map[int32]string{1: flatSchema})
	tp := topicPartition{"t", 0}
	tk.buf.assign([]topicPartition{tp}, []int64{0})
	mk := func(off int64, key []byte) polled {
		m := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &tp.topic, Partition: 0, Offset: ckafka.Offset(off)},
			Key: key, Value: flat(t, 1, off, "v"), TimestampType: ckafka.TimestampNotAvailable}
		return tk.toPolled(m)
	}
	tk.buf.add([]polled{mk(0, kafkatest.Frame(9, []byte{0x02})), mk(1, []byte("plain")), mk(2, nil)})
	bs := readAll(t, tk, l, h)
	keys := columnByName(bs[0].Records, sdk.ColumnKey).(*array.Binary)
	ts := columnByName(bs[0].Records, sdk.ColumnTimestamp)
	if bs[0].Records.NumRows() != 2 || string(keys.Value(0)) != "\x02" || !keys.IsNull(1) || !ts.IsNull(0) {
		t.Fatalf("rows %d, keys %v, timestamp null %v; want the avro key's payload, then a null key, and null timestamps",
			bs[0].Records.NumRows(), keys, ts.IsNull(0))
	}
	if d := h.deadLetters(); len(d) != 1 || d[0].Offset != 1 || !strings.Contains(d[0].Reason, "key: ") {
		t.Fatalf("dead letters %+v; want offset 1's unframed key", d)
	}
}

// A batch formed while its partition was revoked is dropped, not handed
// on, and the revocation reports the last Next handed on.
func TestRevokeDropsBufferedRecords(t *testing.T) {
	l := newLedger(t)
	h := newFakeHost(l, "unit")
	tk, _ := unitTask(t, h, unitSettings(), map[int32]string{1: flatSchema})
	tp := topicPartition{"t", 0}
	tk.buf.assign([]topicPartition{tp}, []int64{5})
	feed(tk, tp, 5, flat(t, 1, 5, "a"))
	readAll(t, tk, l, h)
	feed(tk, tp, 6, flat(t, 1, 6, "b"), flat(t, 1, 7, "c"))
	p := tk.buf.parts[tp]
	recs, from, ok := tk.buf.peek(p, 10)
	if !ok || from != 6 || len(recs) != 2 {
		t.Fatalf("peek: %d records from %d, ok %v", len(recs), from, ok)
	}
	next := tk.buf.revoke([]topicPartition{tp})
	if next["t/0"] != 6 {
		t.Fatalf("revoke reported %v, want t/0 at 6", next)
	}
	if tk.buf.take(p, 2, 8) {
		t.Fatal("take succeeded on a revoked partition")
	}
	if tk.buf.size() != 0 {
		t.Fatalf("buffer holds %d bytes after the revocation", tk.buf.size())
	}
}

// A record below the start position (a recreated topic) fails the task;
// redeliveries between the start and the position are dropped.
func TestOffsetsGoingBackwards(t *testing.T) {
	b := newBuffer(10, 0)
	tp := topicPartition{"t", 1}
	b.assign([]topicPartition{tp}, []int64{100})
	rec := func(off int64) polled { return polled{tp: tp, record: record{offset: off, value: []byte{1}, size: 1}} }
	res := b.add([]polled{rec(100), rec(101), rec(100)})
	if res.dropped != 1 || b.err() != nil {
		t.Fatalf("redelivery: dropped %d, err %v; want 1 dropped and no error", res.dropped, b.err())
	}
	b.add([]polled{rec(3)})
	if err := b.err(); err == nil || !strings.Contains(err.Error(), "offset 3, before the start position 100") {
		t.Fatalf("err %v; want the task failing on offset 3 before the start 100", err)
	}
}

// A pressed buffer (partitions paused for a full buffer) hands on partial
// batches at once: the consumer resumes only once Read drains it, so
// records waiting out their linger would stall fetching until it ended.
func TestPressedBufferSkipsTheLinger(t *testing.T) {
	b := newBuffer(10, time.Hour)
	tp := topicPartition{"t", 0}
	b.assign([]topicPartition{tp}, []int64{0})
	b.add([]polled{{tp: tp, record: record{offset: 0, value: []byte{1}, size: 1, arrived: 0}}})
	<-b.ready // the first record's wake
	if ready, due := b.readyParts(time.Second); len(ready) != 0 || due != time.Hour {
		t.Fatalf("before the press: ready %d, due %v; want none ready until the linger (1h)", len(ready), due)
	}
	b.press(true)
	select {
	case <-b.ready:
	default:
		t.Fatal("press did not wake a waiting Read")
	}
	if ready, _ := b.readyParts(time.Second); len(ready) != 1 {
		t.Fatalf("pressed: %d partitions ready, want the one with a partial batch", len(ready))
	}
	b.press(false)
	if ready, _ := b.readyParts(time.Second); len(ready) != 0 {
		t.Fatalf("released: %d partitions ready, want none before the linger", len(ready))
	}
}

// Registry failures worth retrying are the network's or the registry's;
// anything else is the schema's.
func TestRegistryUnavailable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("schema registry x: schema id 3: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("schema registry x: schema id 3: %w", srclient.Error{Code: 50001, Message: "boom"}), true},
		{errors.New("schema registry http://r: schema id 3: 503 Service Unavailable (the registry failed; check its logs)"), true},
		{errors.New("schema registry http://r: schema id 3: parse Avro schema: avro: unknown type: Foo"), false},
		{errors.New("schema registry http://r: schema id 3: field next: recursive record floe.Node cannot be a column"), false},
	}
	for _, c := range cases {
		if got := registryUnavailable(c.err); got != c.want {
			t.Errorf("registryUnavailable(%q) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A batch reserves its string columns' data for as many bytes per row as
// the last batch had, so the buffers do not grow by doubling.
func TestBatchReservesTheLastBatchsData(t *testing.T) {
	dec, err := schemas.NewDecoder(avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"s","type":"string"},{"name":"n","type":"long"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	vs := newValueSchema(memory.NewGoAllocator(), 1, dec)
	s := vs.builder.Field(0).(*array.StringBuilder)
	for range 100 {
		s.Append(strings.Repeat("x", 40))
		vs.builder.Field(1).(*array.Int64Builder).Append(1)
		for _, f := range vs.builder.Fields()[2:] { // the metadata columns
			f.AppendNull()
		}
	}
	noteData(vs)
	vs.builder.NewRecordBatch().Release()
	if vs.dataPerRow[0] != 40 || vs.dataPerRow[1] != 0 {
		t.Fatalf("bytes per row %v; want 40 for the string column, 0 for the long", vs.dataPerRow[:2])
	}
	reserveData(vs, 1000, 100_000)
	if got := s.DataCap(); got < 40*1000 {
		t.Fatalf("string data reserved for 1000 rows: %d bytes, want at least 40,000", got)
	}
	vs.builder.NewRecordBatch().Release()
	// Rows whose payloads are smaller than the last batch's: no more than
	// the payloads (rounded up to the allocator's 64 bytes).
	reserveData(vs, 1000, 5_000)
	if got := s.DataCap(); got > 5_000+64 {
		t.Fatalf("string data reserved for 1000 rows of 5,000 payload bytes: %d bytes", got)
	}
}
