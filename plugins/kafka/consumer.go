package kafka

import (
	"context"
	"encoding/binary"
	"log/slog"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/schemas"
)

// Poll loop tuning.
const (
	// pollTimeoutMs is how long one Poll waits for a message; the loop
	// checks for Close and for the buffer draining at least this often.
	pollTimeoutMs = 100
	// pausedPollTimeoutMs is the same while partitions are paused, so
	// they resume soon after Read drains the buffer.
	pausedPollTimeoutMs = 20
	// pollBurst is how many messages the loop gathers before it hands
	// them to the buffer under one lock.
	pollBurst = 512
)

// pollLoop runs for the task's lifetime on its own goroutine: it polls the
// consumer (which runs the rebalance callbacks and keeps the member alive
// in the group: polling never stops, even with every partition paused),
// moves messages into the buffer, and pauses or resumes the partitions as
// the buffer passes buffer.max.bytes or drains below half of it.
func (t *task) pollLoop() {
	defer close(t.pollDone)
	for t.ctx.Err() == nil {
		timeout := pollTimeoutMs
		if t.paused.Load() {
			timeout = pausedPollTimeoutMs
		}
		ev := t.c.Poll(timeout)
		for n := 0; ev != nil; n++ {
			t.handle(ev)
			if n >= pollBurst || t.ctx.Err() != nil {
				break
			}
			ev = t.c.Poll(0)
		}
		t.flushLocal()
		t.backpressure()
		t.checkStarved(time.Now())
	}
}

// handle processes one event from Poll. Rebalances do not come here: the
// callback handles them inside Poll. An error saying the brokers refuse
// the consumer (credentials, ACLs: see refusal.go) fails the task;
// librdkafka retries every other error by itself, so those are only
// logged.
func (t *task) handle(ev ckafka.Event) {
	switch e := ev.(type) {
	case *ckafka.Message:
		if e.TopicPartition.Error != nil {
			if t.refused(e.TopicPartition.Error, topicOf(e.TopicPartition)) {
				return
			}
			t.log.Warn("kafka: consumer error on a partition", "topic", topicOf(e.TopicPartition),
				"partition", e.TopicPartition.Partition, "error", e.TopicPartition.Error)
			return
		}
		t.local = append(t.local, t.toPolled(e))
	case ckafka.Error:
		if e.IsFatal() {
			t.replaceFenced(e)
			return
		}
		if t.refused(e, "") {
			return
		}
		if n, ok := t.errLog.admit(e.Code(), time.Now()); ok {
			t.log.Warn("kafka: consumer error", "code", e.Code().String(), "error", e.Error(), "repeats_since_last_logged", n)
		}
	case ckafka.OffsetsCommitted:
		if e.Error != nil {
			t.log.Warn("kafka: offset commit failed", "error", e.Error)
		}
	}
}

func topicOf(tp ckafka.TopicPartition) string {
	if tp.Topic == nil {
		return ""
	}
	return *tp.Topic
}

// toPolled turns a message into a buffered record. The schema id is read
// here, so batching can split runs without decoding.
func (t *task) toPolled(m *ckafka.Message) polled {
	r := polled{
		tp: topicPartition{topic: topicOf(m.TopicPartition), partition: m.TopicPartition.Partition},
		record: record{
			offset:   int64(m.TopicPartition.Offset),
			tsMs:     -1,
			key:      m.Key,
			value:    m.Value,
			headers:  m.Headers,
			schemaID: noSchema,
			arrived:  t.now(),
		},
	}
	if m.TimestampType != ckafka.TimestampNotAvailable {
		r.tsMs = m.Timestamp.UnixMilli()
	}
	if len(m.Value) >= schemas.ConfluentHeaderLen && m.Value[0] == 0 {
		r.schemaID = int32(binary.BigEndian.Uint32(m.Value[1:schemas.ConfluentHeaderLen]))
	}
	r.size = len(m.Key) + len(m.Value) + recordOverhead
	for _, h := range m.Headers {
		r.size += len(h.Key) + len(h.Value) + 16
	}
	return r
}

// flushLocal moves the messages gathered by the poll loop into the
// buffer. The rebalance callbacks call it first, so that messages of a
// partition polled before its revocation are not mistaken for later ones.
func (t *task) flushLocal() {
	if len(t.local) == 0 {
		return
	}
	res := t.buf.add(t.local)
	clear(t.local)
	t.local = t.local[:0]
	for _, g := range res.gaps {
		t.log.Warn("kafka: records before the first one read are gone (deleted by retention or compaction, or aborted transactions); the batch covers them",
			"gap", g)
	}
	if res.dropped > 0 {
		t.log.Debug("kafka: dropped redelivered or unassigned records", "count", res.dropped)
	}
}

// backpressure pauses every assigned partition once the buffer holds more
// than buffer.max.bytes, and resumes them once it drains below half. The
// consumer stays in the group meanwhile: the loop keeps polling.
func (t *task) backpressure() {
	size := t.buf.size()
	switch {
	case !t.paused.Load() && size > t.set.maxBytes:
		tps := t.buf.assigned()
		if err := t.c.Pause(toKafka(tps, nil)); err != nil {
			t.log.Warn("kafka: pause partitions failed", "error", err)
			return
		}
		t.setPaused(true)
		t.pauses.Add(1)
		t.log.Info("kafka: buffer full; partitions paused until the pipeline catches up", "buffered_bytes", size,
			"max_bytes", t.set.maxBytes, "partitions", len(tps))
	case t.paused.Load() && size <= t.set.maxBytes/2:
		tps := t.buf.assigned()
		if err := t.c.Resume(toKafka(tps, nil)); err != nil {
			t.log.Warn("kafka: resume partitions failed", "error", err)
			return
		}
		t.setPaused(false)
		t.log.Info("kafka: buffer drained; partitions resumed", "buffered_bytes", size, "partitions", len(tps))
	}
}

// setPaused records whether backpressure holds the partitions paused,
// for the poll loop and for the buffer, whose records are all ready
// meanwhile (see buffer.pressed).
func (t *task) setPaused(on bool) {
	t.paused.Store(on)
	t.buf.press(on)
}

// toKafka converts partitions (with offsets, when given) to the client's type.
func toKafka(tps []topicPartition, offsets []ckafka.Offset) []ckafka.TopicPartition {
	out := make([]ckafka.TopicPartition, len(tps))
	for i, tp := range tps {
		topic := tp.topic
		out[i] = ckafka.TopicPartition{Topic: &topic, Partition: tp.partition}
		if offsets != nil {
			out[i].Offset = offsets[i]
		}
	}
	return out
}

// forwardLogs hands m's librdkafka log lines to the task's logger until
// m closes.
func (t *task) forwardLogs(m *member) {
	defer close(m.logsDone)
	for ev := range m.Logs() {
		level := slog.LevelDebug
		switch {
		case ev.Level <= 3:
			level = slog.LevelError
		case ev.Level == 4:
			level = slog.LevelWarn
		case ev.Level == 5:
			level = slog.LevelInfo
		}
		t.log.Log(t.ctx, level, "librdkafka: "+ev.Message, "tag", ev.Tag, "client", ev.Name)
	}
}

// wait sleeps for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// errorRepeatEvery is how often one kind of consumer error is logged
// while it keeps coming.
const errorRepeatEvery = 10 * time.Second

// errorLog decides which consumer errors are logged: the first of each
// code, then at most one per errorRepeatEvery, saying how many were not.
type errorLog struct {
	last       map[ckafka.ErrorCode]time.Time
	suppressed map[ckafka.ErrorCode]int
}

// admit reports whether an error of code seen at now is logged, and how
// many of that code were not logged since the last one that was.
func (l *errorLog) admit(code ckafka.ErrorCode, now time.Time) (int, bool) {
	if l.last == nil {
		l.last, l.suppressed = map[ckafka.ErrorCode]time.Time{}, map[ckafka.ErrorCode]int{}
	}
	if at, seen := l.last[code]; seen && now.Sub(at) < errorRepeatEvery {
		l.suppressed[code]++
		return 0, false
	}
	n := l.suppressed[code]
	l.last[code], l.suppressed[code] = now, 0
	return n, true
}
