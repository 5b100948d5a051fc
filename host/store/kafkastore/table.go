package kafkastore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
)

// FormatVersion is the envelope format this package writes and the
// newest it reads.
const FormatVersion = 1

// Errors the stores wrap; test for them with errors.Is.
var (
	// ErrOtherCluster is the sticky error of a table that read a record
	// another floe cluster (another group.id) wrote: two clusters are
	// pointed at one topic. The message names the topic, the record and
	// both group.ids.
	ErrOtherCluster = errors.New("record of another floe cluster")
	// ErrRejected is wrapped by Table.Write when the table's admission
	// rule rejected a record it wrote (the stores wrap a more specific
	// error as well: ErrFenced, ErrStaleGeneration).
	ErrRejected = errors.New("record rejected by the readers")
	// ErrFenced is wrapped by config writes after another worker claimed
	// the writes (ClaimWrites) or wrote a newer leader epoch: this worker
	// is no longer the config topic's writer, and its write is not
	// visible to any reader.
	ErrFenced = errors.New("fenced by a newer leader")
	// ErrNotClaimed is wrapped by writes to a transactional table that
	// has no live claim: call Claim (ClaimWrites) first, and again after a
	// write that failed with it.
	ErrNotClaimed = errors.New("writes not claimed")
	// ErrClosed is returned once the table is closed.
	ErrClosed = errors.New("store closed")
)

// envelope is every value the tables write: the data plus who wrote it.
// A tombstone (delete) carries the same fields in headers.
type envelope struct {
	Format  int             `json:"format"`
	GroupID string          `json:"group_id"`
	Epoch   int64           `json:"epoch,omitempty"`
	Data    json.RawMessage `json:"data"`
}

// Header keys on tombstones, which have no value to carry an envelope.
const (
	headerFormat  = "floe.format"
	headerGroupID = "floe.group.id"
	headerEpoch   = "floe.epoch"
)

// Record is one applied (or, for Admit, proposed) record.
type Record struct {
	Key string
	// Data is the envelope's data; nil for a tombstone.
	Data json.RawMessage
	// Epoch is the writer's epoch from the envelope (the leader epoch on
	// the config topic; 0 elsewhere).
	Epoch     int64
	Partition int32
	Offset    int64
	Timestamp time.Time
}

// Deleted reports whether the record is a tombstone.
func (r Record) Deleted() bool { return r.Data == nil }

// Position is where a written record landed.
type Position struct {
	Partition int32
	Offset    int64
}

// Mutation is one record to write.
type Mutation struct {
	Key string
	// Value is marshalled to JSON as the envelope's data; nil writes a
	// tombstone, which deletes the key.
	Value any
	// Epoch is stamped on the record (the config store's leader epoch).
	Epoch int64
}

// TableConfig configures a Table.
type TableConfig struct {
	// Client reaches the cluster.
	Client kclient.Config
	// Topic is the compacted topic; it must exist (kclient.EnsureTopic).
	Topic string
	// TopicKey is the worker config key naming the topic
	// (config.storage.topic, …), quoted in errors.
	TopicKey string
	// GroupID is the cluster's group.id, written into every record and
	// checked on every record read.
	GroupID string
	// ClientID names the table's clients in broker logs.
	ClientID string
	// TransactionalID makes writes transactional under this id (one
	// writer at a time; see Claim) and reads read_committed. Empty means
	// a producer with one request in flight, any number of writers,
	// read_uncommitted.
	TransactionalID string
	// Admit decides whether the reader applies a record; nil applies all.
	// It runs on the reader goroutine, in partition order, with the table
	// locked: get returns the current record of a key. It must be quick
	// and deterministic, so every reader of the log builds the same state.
	Admit func(next Record, get func(key string) (Record, bool)) bool
	// OnApply is called on the reader goroutine after every applied
	// record, in partition order, before ReadToEnd and WaitFor count the
	// record as read. It may read the table; it must not wait for the
	// table (ReadToEnd, WaitFor, Write), since the reader waits for it.
	OnApply func(Record)
	// RepairShadowed makes every Write also rewrite the keys whose newest
	// record in the log was rejected by Admit (see Table.Write).
	RepairShadowed bool
	// Logger receives the clients' logs and warnings; nil discards them.
	Logger *slog.Logger
}

// Table is a key→value view of a compacted topic: a reader consumes every
// partition from the beginning and applies records in partition order
// into a map (a tombstone deletes its key), and writes go through a
// producer whose delivery is confirmed. Methods are safe for concurrent
// use.
//
// # Reading
//
// The reader starts at open and runs until Close. [Table.ReadToEnd]
// returns once the reader has applied every record below the end offsets
// the broker reported at the call (the high watermark; the last stable
// offset for a transactional table, which an open transaction holds back,
// so ctx bounds the wait). Get and Scan read the applied state without
// I/O; call ReadToEnd first for a read that sees every acknowledged write.
//
// # Writing
//
// [Table.Write] returns once the broker acknowledged every record (acks
// all) and this table's reader applied them: after Write returns, Get on
// this table sees the write (read-your-writes), and ReadToEnd on any table
// of the topic does. Another process that got the returned positions can
// call WaitFor instead.
//
// # Failure
//
// A record this package did not write (not an envelope), written by a
// newer format, or by another cluster (another group.id: ErrOtherCluster)
// stops the reader: every later call returns that error, naming the
// topic, the record and the fix. A fatal client error does the same.
type Table struct {
	cfg    TableConfig
	logger *slog.Logger
	cons   *kafka.Consumer
	// ends asks for end offsets on connections of its own (a consumer
	// that never fetches): on the reader's, a query would wait behind
	// the fetch long-poll (a broker answers a connection's requests in
	// order), 100 ms a call.
	ends  *kafka.Consumer
	parts []int32
	errs  kclient.ErrorLog

	mu    sync.Mutex
	state map[string]Record
	// applied is, per partition, the offset below which every record is
	// in state; read is the same once OnApply ran for them.
	applied, read map[int32]int64
	// shadowed holds keys whose newest record was rejected by Admit.
	shadowed map[string]struct{}
	failed   error
	closed   bool
	// changed is closed and replaced whenever read or failed changes.
	changed chan struct{}

	// wmu serialises writers of a transactional table and guards the
	// producer of either kind.
	wmu      sync.Mutex
	producer *kafka.Producer
	pdone    chan struct{}
	// perrs is the producer's error log, read without wmu by error
	// messages built while a writer holds it.
	perrs atomic.Pointer[kclient.ErrorLog]

	stop chan struct{}
	done chan struct{}
}

// OpenTable starts the reader and reads to the end before it returns, so
// the table holds the topic's state as of the call; ctx bounds that.
func OpenTable(ctx context.Context, cfg TableConfig) (*Table, error) {
	if cfg.Topic == "" || cfg.GroupID == "" {
		return nil, errors.New("kafkastore: a table needs a topic and a group.id")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	isolation := "read_uncommitted"
	if cfg.TransactionalID != "" {
		isolation = "read_committed"
	}
	cons, err := cfg.Client.NewConsumer(logger, kafka.ConfigMap{
		// librdkafka wants a group.id; the reader assigns its partitions
		// itself and never joins or commits, so the group stays empty.
		"group.id":                 cfg.GroupID + "-reader-" + cfg.Topic,
		"client.id":                cfg.ClientID,
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"enable.partition.eof":     true,
		"auto.offset.reset":        "earliest",
		"isolation.level":          isolation,
		// A new record completes a waiting fetch at once; this bounds the
		// wait when only a transaction marker moves the end.
		"fetch.wait.max.ms": 100,
	})
	if err != nil {
		return nil, fmt.Errorf("kafkastore: topic %q (%s): %w", cfg.Topic, cfg.TopicKey, err)
	}
	t := &Table{
		cfg: cfg, logger: logger, cons: cons,
		state: map[string]Record{}, applied: map[int32]int64{}, read: map[int32]int64{},
		shadowed: map[string]struct{}{}, changed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if t.ends, err = cfg.Client.NewConsumer(logger, kafka.ConfigMap{
		"group.id":           cfg.GroupID + "-ends-" + cfg.Topic,
		"client.id":          cfg.ClientID,
		"enable.auto.commit": false,
		"isolation.level":    isolation,
	}); err != nil {
		_ = cons.Close()
		return nil, fmt.Errorf("kafkastore: topic %q (%s): %w", cfg.Topic, cfg.TopicKey, err)
	}
	if err := t.assign(ctx); err != nil {
		_ = t.ends.Close()
		_ = cons.Close()
		return nil, err
	}
	go t.run()
	if err := t.ReadToEnd(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// assign finds the topic's partitions and assigns them all from the
// beginning.
func (t *Table) assign(ctx context.Context) error {
	topic := t.cfg.Topic
	for {
		wait := 2 * time.Second
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, max(time.Until(d), 10*time.Millisecond))
		}
		md, err := t.cons.GetMetadata(&topic, false, int(wait.Milliseconds()))
		if err == nil {
			if tm, ok := md.Topics[topic]; ok && tm.Error.Code() == kafka.ErrNoError && len(tm.Partitions) > 0 {
				var tps []kafka.TopicPartition
				for _, p := range tm.Partitions {
					t.parts = append(t.parts, p.ID)
					tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p.ID, Offset: kafka.OffsetBeginning})
				}
				slices.Sort(t.parts)
				for _, p := range t.parts {
					t.applied[p], t.read[p] = 0, 0
				}
				if err := t.cons.Assign(tps); err != nil {
					return fmt.Errorf("kafkastore: topic %q (%s): assign: %w", topic, t.cfg.TopicKey, t.cfg.Client.RedactError(err))
				}
				return nil
			} else if ok && tm.Error.Code() == kafka.ErrUnknownTopicOrPart {
				err = fmt.Errorf("topic does not exist (it is created when a store opens)")
			} else if ok {
				err = tm.Error
			}
		}
		select {
		case <-ctx.Done():
			return t.clientErrorf("find the partitions: %v: %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errorf builds an error naming the topic.
func (t *Table) errorf(format string, args ...any) error {
	return fmt.Errorf("kafkastore: topic %q (%s): "+format, append([]any{t.cfg.Topic, t.cfg.TopicKey}, args...)...)
}

// clientErrorf is errorf for a call the broker did not answer as hoped:
// it ends with the clients' last errors (redacted), which say why.
func (t *Table) clientErrorf(format string, args ...any) error {
	err := t.errorf(format, args...)
	recent := t.errs.Recent()
	if perrs := t.perrs.Load(); perrs != nil {
		if r := perrs.Recent(); r != "" {
			recent = strings.Trim(recent+"; "+r, "; ")
		}
	}
	if recent != "" {
		err = fmt.Errorf("%w (client: %s; check bootstrap.servers, security.protocol, sasl.*, ssl.*)", err, t.cfg.Client.Redact(recent))
	}
	return err
}

// run is the reader goroutine.
func (t *Table) run() {
	defer close(t.done)
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		if t.Err() != nil {
			// A failed table reads no further; wait for Close.
			<-t.stop
			return
		}
		switch e := t.cons.Poll(100).(type) {
		case *kafka.Message:
			t.apply(e)
		case kafka.PartitionEOF:
			t.advance(e.Partition, int64(e.Offset))
		case kafka.Error:
			t.errs.Note(e)
			if e.IsFatal() {
				t.fail(t.clientErrorf("reader: %w", t.cfg.Client.RedactError(e)))
			}
		}
	}
}

// apply decodes one message and applies it.
func (t *Table) apply(m *kafka.Message) {
	rec, err := t.decode(m)
	if err != nil {
		t.fail(err)
		return
	}
	t.mu.Lock()
	ok := true
	if t.cfg.Admit != nil {
		ok = t.cfg.Admit(rec, t.getLocked)
	}
	if ok {
		if rec.Deleted() {
			delete(t.state, rec.Key)
		} else {
			t.state[rec.Key] = rec
		}
		delete(t.shadowed, rec.Key)
	} else {
		t.shadowed[rec.Key] = struct{}{}
	}
	t.applied[rec.Partition] = max(t.applied[rec.Partition], rec.Offset+1)
	t.mu.Unlock()
	if !ok {
		t.logger.Debug("ignored a record the admission rule rejected", "topic", t.cfg.Topic, "key", rec.Key,
			"partition", rec.Partition, "offset", rec.Offset, "epoch", rec.Epoch)
	} else if t.cfg.OnApply != nil {
		t.cfg.OnApply(rec)
	}
	t.advance(rec.Partition, rec.Offset+1)
}

// advance records that everything below next in partition p was read.
func (t *Table) advance(p int32, next int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.applied[p] = max(t.applied[p], next)
	if next > t.read[p] {
		t.read[p] = next
		t.notifyLocked()
	}
}

func (t *Table) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// fail makes err the table's sticky error.
func (t *Table) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed == nil {
		t.failed = err
		t.logger.Error("store stopped reading", "topic", t.cfg.Topic, "error", err)
		t.notifyLocked()
	}
}

// Err returns the table's sticky error: ErrClosed after Close, the reason
// the reader stopped, or nil.
func (t *Table) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.errLocked()
}

func (t *Table) errLocked() error {
	if t.failed != nil {
		return t.failed
	}
	if t.closed {
		return fmt.Errorf("kafkastore: topic %q: %w", t.cfg.Topic, ErrClosed)
	}
	return nil
}

// decode checks one message's envelope (or a tombstone's headers).
func (t *Table) decode(m *kafka.Message) (Record, error) {
	rec := Record{Key: string(m.Key), Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Timestamp: m.Timestamp}
	where := fmt.Sprintf("partition %d offset %d (key %q)", rec.Partition, rec.Offset, rec.Key)
	notOurs := func(why string) error {
		return fmt.Errorf("kafkastore: topic %q (%s) holds a record floe did not write at %s: %s. "+
			"The topic must be floe's alone: set %s to a topic no other application writes, or delete the record's key with a tombstone",
			t.cfg.Topic, t.cfg.TopicKey, where, why, t.cfg.TopicKey)
	}
	if m.Key == nil {
		return rec, notOurs("it has no key")
	}
	var env envelope
	if m.Value == nil {
		for _, h := range m.Headers {
			switch h.Key {
			case headerFormat:
				env.Format, _ = strconv.Atoi(string(h.Value))
			case headerGroupID:
				env.GroupID = string(h.Value)
			case headerEpoch:
				env.Epoch, _ = strconv.ParseInt(string(h.Value), 10, 64)
			}
		}
		if env.GroupID == "" {
			// A tombstone from a tool (kafka-console-producer, kcat) has
			// no headers: deleting a key by hand is allowed.
			return rec, nil
		}
	} else {
		if err := json.Unmarshal(m.Value, &env); err != nil {
			return rec, notOurs(fmt.Sprintf("its value is not JSON (%v)", err))
		}
		if env.Format == 0 || env.GroupID == "" || len(env.Data) == 0 || string(env.Data) == "null" {
			return rec, notOurs("its value is not a floe envelope (format, group_id, data)")
		}
		rec.Data = env.Data
	}
	rec.Epoch = env.Epoch
	if env.GroupID != t.cfg.GroupID {
		return rec, fmt.Errorf("kafkastore: %w: topic %q (%s) holds a record of the floe cluster with group.id %q at %s, but this worker's group.id is %q: "+
			"two clusters are pointed at one topic. Give each cluster its own config.storage.topic, offset.storage.topic and status.storage.topic, or fix group.id",
			ErrOtherCluster, t.cfg.Topic, t.cfg.TopicKey, env.GroupID, where, t.cfg.GroupID)
	}
	if env.Format > FormatVersion {
		return rec, fmt.Errorf("kafkastore: topic %q (%s) holds a record of format %d at %s, newer than this worker reads (%d): a newer floe wrote it. Upgrade this worker",
			t.cfg.Topic, t.cfg.TopicKey, env.Format, where, FormatVersion)
	}
	return rec, nil
}

// getLocked returns the current record of key; t.mu is held.
func (t *Table) getLocked(key string) (Record, bool) {
	r, ok := t.state[key]
	return r, ok
}

// Get returns the applied record of key, without I/O.
func (t *Table) Get(key string) (Record, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.getLocked(key)
}

// Scan returns the applied records whose keys start with prefix, sorted
// by key, without I/O.
func (t *Table) Scan(prefix string) []Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scanLocked(prefix)
}

func (t *Table) scanLocked(prefix string) []Record {
	var out []Record
	for k, r := range t.state {
		if strings.HasPrefix(k, prefix) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// View runs fn with the table locked, so fn sees one consistent state:
// get and scan read it, and offsets holds, per partition, the offset below
// which every record is applied. fn must not call the table's methods.
func (t *Table) View(fn func(get func(string) (Record, bool), scan func(string) []Record, offsets map[int32]int64)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fn(t.getLocked, t.scanLocked, maps.Clone(t.applied))
}

// Offsets returns, per partition, the offset below which every record is
// applied.
func (t *Table) Offsets() map[int32]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.applied)
}

// Partitions returns the topic's partitions, as found at open.
func (t *Table) Partitions() []int32 { return slices.Clone(t.parts) }

// ReadToEnd returns once the reader has applied (and called OnApply for)
// every record below the end offsets observed at the call: the high
// watermark, or for a transactional table the last stable offset. ctx
// bounds the wait; the error then says how far the reader got.
func (t *Table) ReadToEnd(ctx context.Context) error {
	if err := t.Err(); err != nil {
		return err
	}
	ends, err := t.endOffsets(ctx)
	if err != nil {
		return err
	}
	return t.waitRead(ctx, ends, "read to the end")
}

// endOffsets asks the broker for the end of every partition. Errors a
// partition shows while its leadership settles (just after the topic was
// created, or while a broker restarts) are retried until ctx ends.
//
// It asks through a consumer (QueryWatermarkOffsets, whose high mark is
// the last stable offset under read_committed), not the admin client's
// ListOffsets: while a partition's leader is dead,
// librdkafka 2.11's admin worker and that broker's thread wake each other
// in a loop for as long as the request lives (rd_kafka_broker_get_async,
// a core per store; three workers' stores kept a restarted Kafka node
// from starting on two cores), and a ListOffsets that timed out answers
// "success" with no offset. The consumer's query fails with a timeout
// instead.
//
// That consumer fetches nothing, so librdkafka does not look up a new
// leader for it when one dies: it keeps asking the dead one until its
// periodic metadata refresh (topic.metadata.refresh.interval.ms, 5 min),
// which once held a worker's connector start, and a new leader's claim of
// the config topic, for five minutes while a Kafka node was down. After a
// failed round it asks for the topic's metadata, which updates the
// leaders it asks (measured: 11 s from the kill of a partition's leader
// to its next answered query; never within 60 s without).
func (t *Table) endOffsets(ctx context.Context) (map[int32]int64, error) {
	ends := map[int32]int64{}
	var last error
	for round := 0; ; round++ {
		wait := queryWait(ctx)
		if round > 0 && wait > 0 {
			topic := t.cfg.Topic
			_, _ = t.ends.GetMetadata(&topic, false, int(wait.Milliseconds())) // a failure is left to the next round
			wait = queryWait(ctx)
		}
		var missing []int32
		for _, p := range t.parts {
			if _, ok := ends[p]; !ok {
				missing = append(missing, p)
			}
		}
		if wait > 0 {
			for _, a := range t.queryEnds(missing, wait) {
				switch {
				case a.err == nil && a.high >= 0:
					ends[a.partition] = a.high
				case a.err == nil:
					last = fmt.Errorf("end of partition %d: no offset in the answer", a.partition)
				case transientEnd(a.err):
					last = fmt.Errorf("end of partition %d: %w", a.partition, t.cfg.Client.RedactError(a.err))
				default:
					return nil, t.clientErrorf("read to the end: end of partition %d: %w", a.partition, t.cfg.Client.RedactError(a.err))
				}
			}
		}
		if len(ends) == len(t.parts) {
			return ends, nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("the broker did not answer for %d partitions", len(t.parts)-len(ends))
			}
			return nil, t.clientErrorf("read to the end: %v: %w", last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// queryWait is how long one end query may take: endQueryTimeout, or
// less when ctx ends sooner.
func queryWait(ctx context.Context) time.Duration {
	wait := endQueryTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	return wait
}

type endAnswer struct {
	partition int32
	high      int64
	err       error
}

// queryEnds asks for the ends of parts, endQueries at a time: a query to a
// dead leader waits out librdkafka's request timeout (about 10 s here,
// whatever wait says), so one after another the offsets topic's 25
// partitions could take minutes.
func (t *Table) queryEnds(parts []int32, wait time.Duration) []endAnswer {
	out := make([]endAnswer, len(parts))
	sem := make(chan struct{}, endQueries)
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, high, err := t.ends.QueryWatermarkOffsets(t.cfg.Topic, p, int(wait.Milliseconds()))
			out[i] = endAnswer{partition: p, high: high, err: err}
		}()
	}
	wg.Wait()
	return out
}

// endQueries bounds the end queries in flight of one table.
const endQueries = 8

// endQueryTimeout bounds one partition's end query: the caller's context
// may be longer, and a query to a dead leader waits it out.
const endQueryTimeout = 3 * time.Second

// transientEnd reports an end query failure that means the partition's
// leader is unknown, moving or not answering: transient while a new
// topic's leaders are elected or a broker restarts.
func transientEnd(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke.Code() {
	case kafka.ErrNoent, kafka.ErrLeaderNotAvailable, kafka.ErrNotLeaderForPartition, kafka.ErrUnknownTopicOrPart,
		kafka.ErrUnknownPartition, kafka.ErrTransport, kafka.ErrAllBrokersDown, kafka.ErrTimedOut, kafka.ErrTimedOutQueue,
		kafka.ErrUnknownLeaderEpoch, kafka.ErrFencedLeaderEpoch, kafka.ErrReplicaNotAvailable, kafka.ErrOffsetNotAvailable,
		kafka.ErrNotCoordinator, kafka.ErrRequestTimedOut, kafka.ErrDestroy:
		return true
	}
	return strings.Contains(ke.Error(), "partition leaders")
}

// waitRead waits until read[p] >= ends[p] for every partition.
func (t *Table) waitRead(ctx context.Context, ends map[int32]int64, what string) error {
	for {
		t.mu.Lock()
		if err := t.errLocked(); err != nil {
			t.mu.Unlock()
			return err
		}
		behind := int32(-1)
		for _, p := range t.parts {
			if t.read[p] < ends[p] {
				behind = p
				break
			}
		}
		if behind < 0 {
			t.mu.Unlock()
			return nil
		}
		at, end := t.read[behind], ends[behind]
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return t.clientErrorf("%s: partition %d read to offset %d of %d: %w", what, behind, at, end, ctx.Err())
		}
	}
}

// WaitFor returns once the reader has applied (and called OnApply for)
// the record at pos, and every record before it in its partition.
func (t *Table) WaitFor(ctx context.Context, pos ...Position) error {
	ends := map[int32]int64{}
	for _, p := range pos {
		if !slices.Contains(t.parts, p.Partition) {
			return t.errorf("wait for partition %d offset %d: no such partition", p.Partition, p.Offset)
		}
		ends[p.Partition] = max(ends[p.Partition], p.Offset+1)
	}
	return t.waitRead(ctx, ends, "wait for the reader")
}

// Close stops the reader and closes the clients. Calls waiting on the
// table return ErrClosed.
func (t *Table) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.notifyLocked()
	t.mu.Unlock()
	close(t.stop)
	<-t.done
	t.wmu.Lock()
	t.closeProducerLocked()
	t.wmu.Unlock()
	_ = t.ends.Close()
	_ = t.cons.Close()
}
