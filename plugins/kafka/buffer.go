package kafka

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// noSchema is the schema id of a record whose value carries no usable
// Confluent header (null, empty, bad magic byte, too short).
const noSchema = -1

// recordOverhead approximates what a buffered record costs besides its
// key, value and headers, for buffer.max.bytes.
const recordOverhead = 96

// record is one Kafka message as a task buffers it until a batch takes it.
type record struct {
	offset   int64
	tsMs     int64 // Unix milliseconds; -1 when the broker gave none
	key      []byte
	value    []byte // nil for a null value (a tombstone)
	headers  []ckafka.Header
	schemaID int32 // from the Confluent header, or noSchema
	arrived  time.Duration
	size     int
}

// topicPartition identifies a partition without formatting its name.
type topicPartition struct {
	topic     string
	partition int32
}

// partitionName is the source partition name floe uses: <topic>/<partition>.
func partitionName(topic string, partition int32) string {
	return topic + "/" + strconv.Itoa(int(partition))
}

// partition is the state of one assigned Kafka partition.
type partition struct {
	name      string
	topic     string
	partition int32
	// start is where the assignment began; offsets below it mean the log
	// went backwards (a recreated topic), which fails the task.
	start int64
	// next is the Next of the last batch handed on, that is the From of
	// the next batch; -1 until known (then the first record's offset).
	next int64
	// expect is the offset the next polled record should have at least;
	// records below it are redeliveries and are dropped.
	expect int64
	// seen is set once a record arrived since the assignment.
	seen bool

	queue []record // buffered records, from head on
	head  int
	bytes int64
	// revoked is set when the partition leaves the assignment; a batch
	// being formed from it is then dropped instead of handed on.
	revoked bool
}

func (p *partition) buffered() int { return len(p.queue) - p.head }

// buffer holds a task's assigned partitions and their buffered records. The
// poll goroutine adds records and handles rebalances; Read takes batches.
// All fields are guarded by mu.
type buffer struct {
	batchSize int
	linger    time.Duration

	mu    sync.Mutex
	parts map[topicPartition]*partition
	bytes int64
	fatal error
	// pressed: the poll loop paused the partitions because the buffer is
	// full (see task.backpressure). Every buffered record is then ready:
	// the consumer resumes only once Read drains the buffer below half,
	// and partial batches waiting out their linger could hold it above
	// that (several partitions of 4,999 records each) until the linger
	// ended, fetching nothing meanwhile.
	pressed bool
	// ready wakes a waiting Read: a partition got its first record or
	// filled a batch, the buffer was pressed, or the task failed.
	// Capacity 1; sends never block.
	ready chan struct{}
}

func newBuffer(batchSize int, linger time.Duration) *buffer {
	return &buffer{
		batchSize: batchSize,
		linger:    linger,
		parts:     map[topicPartition]*partition{},
		ready:     make(chan struct{}, 1),
	}
}

func (b *buffer) wake() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// fail records the error the task must fail with; Read returns it.
func (b *buffer) fail(err error) {
	b.mu.Lock()
	if b.fatal == nil {
		b.fatal = err
	}
	b.mu.Unlock()
	b.wake()
}

func (b *buffer) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fatal
}

// size returns the buffered bytes.
func (b *buffer) size() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes
}

// assign adds partitions that start at the given positions (-1: from
// the first record that comes).
func (b *buffer) assign(tps []topicPartition, starts []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, tp := range tps {
		if old := b.parts[tp]; old != nil {
			old.revoked = true
			b.bytes -= old.bytes
		}
		b.parts[tp] = &partition{
			name: partitionName(tp.topic, tp.partition), topic: tp.topic, partition: tp.partition,
			start: starts[i], next: starts[i], expect: starts[i],
		}
	}
}

// revoke drops partitions and their buffered records and returns, for
// each one whose position is known, the Next of the last batch handed on
// (or its start position when none was).
func (b *buffer) revoke(tps []topicPartition) map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := map[string]int64{}
	for _, tp := range tps {
		p := b.parts[tp]
		if p == nil {
			continue
		}
		p.revoked = true
		b.bytes -= p.bytes
		p.queue, p.head, p.bytes = nil, 0, 0
		delete(b.parts, tp)
		if p.next >= 0 {
			next[p.name] = p.next
		}
	}
	return next
}

// assigned returns the assigned partitions.
func (b *buffer) assigned() []topicPartition {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Collect(maps.Keys(b.parts))
}

// polled is a record on its way from the poll loop to the buffer.
type polled struct {
	tp topicPartition
	record
}

// addResult says what add did, for the poll loop's logs.
type addResult struct {
	dropped int // redeliveries below the expected offset, or unassigned
	gaps    []string
}

// add appends polled records to their partitions. Records of partitions
// not assigned (any more) and redeliveries are dropped. A record below
// its partition's start position fails the task.
func (b *buffer) add(recs []polled) addResult {
	var res addResult
	b.mu.Lock()
	full := false
	for i := range recs {
		r := &recs[i]
		p := b.parts[r.tp]
		if p == nil {
			res.dropped++
			continue
		}
		if p.expect >= 0 && r.offset < p.expect {
			if p.start >= 0 && r.offset < p.start && b.fatal == nil {
				b.fatal = fmt.Errorf("kafka: topic %s partition %d: the broker returned offset %d, before the start position %d: "+
					"the topic was deleted and recreated, or its log truncated; reset the connector's offsets for it to go on",
					p.topic, p.partition, r.offset, p.start)
				full = true
			}
			res.dropped++
			continue
		}
		if !p.seen && p.expect >= 0 && r.offset > p.expect {
			res.gaps = append(res.gaps, fmt.Sprintf("%s: first record at offset %d, start position %d", p.name, r.offset, p.expect))
		}
		p.seen = true
		if p.next < 0 {
			p.next = r.offset
		}
		p.expect = r.offset + 1
		p.queue = append(p.queue, r.record)
		p.bytes += int64(r.size)
		b.bytes += int64(r.size)
		// Wake Read when a batch is full, and when a partition gets its
		// first record, so a waiting Read learns when its linger ends.
		if n := p.buffered(); n == 1 || n == b.batchSize || b.linger == 0 {
			full = true
		}
	}
	b.mu.Unlock()
	if full {
		b.wake()
	}
	return res
}

// press says whether the consumer is paused for a full buffer; a press
// wakes a waiting Read, since every partition is ready now.
func (b *buffer) press(on bool) {
	b.mu.Lock()
	b.pressed = on
	b.mu.Unlock()
	if on {
		b.wake()
	}
}

// readyParts returns the partitions that have a batch to hand on at now
// (a full batch, records older than the linger, or any records while the
// buffer is pressed), oldest first, and otherwise the time the first one
// will be (zero if none has records).
func (b *buffer) readyParts(now time.Duration) ([]*partition, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ready []*partition
	var wait time.Duration
	for _, p := range b.parts {
		if p.buffered() == 0 {
			continue
		}
		due := p.queue[p.head].arrived + b.linger
		if p.buffered() >= b.batchSize || due <= now || b.pressed {
			ready = append(ready, p)
			continue
		}
		if wait == 0 || due < wait {
			wait = due
		}
	}
	slices.SortFunc(ready, func(x, y *partition) int {
		return int(x.queue[x.head].arrived - y.queue[y.head].arrived)
	})
	return ready, wait
}

// peek returns up to n records from p's head and the From of a batch of
// them. The slice stays valid while only the poll loop appends; the caller
// must call take (or nothing) afterwards, from the same goroutine. ok is
// false when p was revoked.
func (b *buffer) peek(p *partition, n int) (recs []record, from int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.revoked {
		return nil, 0, false
	}
	end := min(p.head+n, len(p.queue))
	return p.queue[p.head:end:end], p.next, true
}

// take removes the first n records of p after a batch of them was formed,
// and sets p's position to next. It reports false when p was revoked in
// the meantime: the batch must then be dropped, not handed on.
func (b *buffer) take(p *partition, n int, next int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.revoked {
		return false
	}
	var freed int64
	for i := p.head; i < p.head+n; i++ {
		freed += int64(p.queue[i].size)
		p.queue[i] = record{}
	}
	p.head += n
	p.bytes -= freed
	b.bytes -= freed
	p.next = next
	switch {
	case p.head == len(p.queue):
		p.queue, p.head = p.queue[:0], 0
	case p.head > len(p.queue)/2 && p.head > 1024:
		// Compact, so the queue does not grow with the partition's history.
		m := copy(p.queue, p.queue[p.head:])
		clear(p.queue[m:])
		p.queue, p.head = p.queue[:m], 0
	}
	return true
}
