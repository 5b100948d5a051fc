package kafkastore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
)

// transactionTimeout bounds how long a leader that died inside a
// transaction holds back the config topic's last stable offset (and with
// it every reader's ReadToEnd) when no new leader claims the writes
// sooner; a new claim aborts the transaction at once.
const transactionTimeout = 10 * time.Second

// abortTimeout bounds aborting a transaction whose write failed.
const abortTimeout = 10 * time.Second

// lingerMs is the store producers' linger.ms. Not 0 or 1: while a
// partition's leader is down, librdkafka's broker thread wakes every
// linger.ms to look at the queued records, and at 0-1 ms two producers
// of a worker (this one and the control topic's) burned two cores in
// their broker and main threads for as long as a Kafka node was down
// (perf, TestDistributedBrokerKill). A store writes a record per status
// change or config write, so 5 ms is not felt.
const lingerMs = 5

// producerConfig is the librdkafka config of the table's producer.
//
// Only a transactional table's producer is idempotent (transactions need
// it). The others keep their order with one request in flight instead:
// while a Kafka node is down, every idempotent producer's broker thread
// for the partitions' new leader spins in user space (librdkafka 2.11:
// five idempotent producers writing a record every 200 ms took 0.6-1.0
// cores, five with one request in flight and no idempotence 0.05; three
// workers' store producers pushed the load average past 150 on two cores
// and kept the dead node from starting again). A retried write may then land twice,
// which a keyed record in a compacted topic shrugs off: the reader
// applies the same record again.
func (t *Table) producerConfig() kafka.ConfigMap {
	cm := kafka.ConfigMap{
		"client.id": t.cfg.ClientID,
		"acks":      "all",
		// Java's partitioner, so a key lands where Kafka Connect's tools
		// would look for it; any fixed one keeps a key in one partition.
		"partitioner":               "murmur2_random",
		"linger.ms":                 lingerMs,
		"go.delivery.report.fields": "none",
	}
	if t.cfg.TransactionalID != "" {
		cm["enable.idempotence"] = true
		cm["transactional.id"] = t.cfg.TransactionalID
		cm["transaction.timeout.ms"] = int(transactionTimeout.Milliseconds())
	} else {
		cm["enable.idempotence"] = false
		cm["max.in.flight.requests.per.connection"] = 1
	}
	return cm
}

// newProducerLocked builds the producer and the goroutine that notes its
// error events; t.wmu is held.
func (t *Table) newProducerLocked() error {
	p, err := t.cfg.Client.NewProducer(t.logger, t.producerConfig())
	if err != nil {
		return fmt.Errorf("kafkastore: topic %q: %w", t.cfg.Topic, err)
	}
	errs := &kclient.ErrorLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range p.Events() {
			if e, ok := ev.(kafka.Error); ok {
				errs.Note(e)
			}
		}
	}()
	t.producer, t.pdone = p, done
	t.perrs.Store(errs)
	return nil
}

// closeProducerLocked closes the producer, if any; t.wmu is held.
func (t *Table) closeProducerLocked() {
	if t.producer == nil {
		return
	}
	t.producer.Close()
	<-t.pdone
	t.producer = nil
}

// Claim makes this table the topic's writer; only for a transactional
// table. It starts a new transactional producer and initialises it, which
// fences every earlier producer with the same transactional.id (their
// next write fails with ErrFenced) and aborts their open transactions.
// Claim again after a write failed with ErrNotClaimed or ErrFenced — only
// if this worker should be the writer, since a claim fences whoever holds
// the writes now. ctx bounds the call.
func (t *Table) Claim(ctx context.Context) error {
	if t.cfg.TransactionalID == "" {
		return fmt.Errorf("kafkastore: topic %q: Claim needs a transactional table", t.cfg.Topic)
	}
	if err := t.Err(); err != nil {
		return err
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.closeProducerLocked()
	if err := t.newProducerLocked(); err != nil {
		return err
	}
	if err := t.producer.InitTransactions(ctx); err != nil {
		err = t.clientErrorf("claim the writes (transactional.id %q): %w", t.cfg.TransactionalID, t.cfg.Client.RedactError(err))
		t.closeProducerLocked()
		return err
	}
	return nil
}

// Write writes muts and returns their positions, in order, once the
// broker acknowledged them and this table's reader applied them. A
// transactional table writes them in one transaction (all or none become
// visible) and needs a live Claim; otherwise they are independent writes
// of a producer with one request in flight (in order; a retry may write a
// record twice), and concurrent Writes are allowed.
//
// When the admission rule rejected a written record, the error wraps
// ErrRejected and names the keys; the records are in the log but no
// reader applies them. With RepairShadowed, the write also rewrites every
// key whose newest record in the log was rejected (a zombie writer's):
// compaction keeps only a key's newest record, so without the rewrite the
// rejected record would outlive the valid one, and a reader starting after
// compaction would no longer know the key. The rewrite carries the current
// value (or a tombstone) with the epoch of muts.
//
// A transactional write fails with an error wrapping ErrFenced when
// another producer claimed the writes since, and ErrNotClaimed when the
// producer had to be dropped (a fatal error, or a commit whose outcome is
// unknown); Claim again before the next write.
func (t *Table) Write(ctx context.Context, muts ...Mutation) ([]Position, error) {
	if len(muts) == 0 {
		return nil, nil
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	n := len(muts)
	tx := t.cfg.TransactionalID != ""
	if tx {
		// One transaction at a time, and the repairs computed under it.
		t.wmu.Lock()
		defer t.wmu.Unlock()
	}
	if t.cfg.RepairShadowed {
		muts = append(muts, t.repairs(muts)...)
	}
	msgs, err := t.encode(muts)
	if err != nil {
		return nil, err
	}
	var pos []Position
	if tx {
		pos, err = t.writeTxn(ctx, msgs)
	} else {
		pos, err = t.writePlain(ctx, msgs)
	}
	if err != nil {
		return nil, err
	}
	if err := t.WaitFor(ctx, pos...); err != nil {
		return pos[:n], err
	}
	if keys := t.rejected(muts[:n], pos); len(keys) > 0 {
		return pos[:n], t.errorf("%w: %s", ErrRejected, strings.Join(keys, ", "))
	}
	return pos[:n], nil
}

// repairs returns the rewrites of the shadowed keys muts does not write.
func (t *Table) repairs(muts []Mutation) []Mutation {
	var epoch int64
	writes := map[string]bool{}
	for _, m := range muts {
		epoch = max(epoch, m.Epoch)
		writes[m.Key] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Mutation
	for k := range t.shadowed {
		if writes[k] {
			continue
		}
		m := Mutation{Key: k, Epoch: epoch}
		if cur, ok := t.state[k]; ok {
			m.Value = cur.Data
		}
		out = append(out, m)
	}
	if len(out) > 0 {
		t.logger.Info("rewriting keys whose newest record was rejected", "topic", t.cfg.Topic, "keys", len(out))
	}
	return out
}

// rejected lists the keys of muts whose record at pos the reader did not
// apply: a put whose key holds an older record (or nothing while the key
// is shadowed), a tombstone whose key still holds an older record.
func (t *Table) rejected(muts []Mutation, pos []Position) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for i, m := range muts {
		cur, ok := t.state[m.Key]
		_, shadowed := t.shadowed[m.Key]
		older := ok && cur.Partition == pos[i].Partition && cur.Offset < pos[i].Offset
		if older || (m.Value != nil && !ok && shadowed) {
			keys = append(keys, strconv.Quote(m.Key))
		}
	}
	return keys
}

// encode builds the messages: envelopes, and tombstones with the
// envelope's fields in headers.
func (t *Table) encode(muts []Mutation) ([]*kafka.Message, error) {
	msgs := make([]*kafka.Message, len(muts))
	for i, m := range muts {
		if m.Key == "" {
			return nil, fmt.Errorf("kafkastore: topic %q: a record needs a key", t.cfg.Topic)
		}
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &t.cfg.Topic, Partition: kafka.PartitionAny},
			Key:            []byte(m.Key),
			Opaque:         i,
		}
		if m.Value == nil || isNullRaw(m.Value) {
			msg.Headers = []kafka.Header{
				{Key: headerFormat, Value: []byte(strconv.Itoa(FormatVersion))},
				{Key: headerGroupID, Value: []byte(t.cfg.GroupID)},
			}
			if m.Epoch != 0 {
				msg.Headers = append(msg.Headers, kafka.Header{Key: headerEpoch, Value: []byte(strconv.FormatInt(m.Epoch, 10))})
			}
		} else {
			data, err := json.Marshal(m.Value)
			if err != nil {
				return nil, fmt.Errorf("kafkastore: topic %q: encode %q: %w", t.cfg.Topic, m.Key, err)
			}
			if msg.Value, err = json.Marshal(envelope{Format: FormatVersion, GroupID: t.cfg.GroupID, Epoch: m.Epoch, Data: data}); err != nil {
				return nil, fmt.Errorf("kafkastore: topic %q: encode %q: %w", t.cfg.Topic, m.Key, err)
			}
		}
		msgs[i] = msg
	}
	return msgs, nil
}

// isNullRaw reports whether v is a json.RawMessage holding nothing: a
// repaired key that is absent.
func isNullRaw(v any) bool {
	r, ok := v.(json.RawMessage)
	return ok && (r == nil || string(r) == "null")
}

// writePlain produces msgs outside a transaction and waits for every
// delivery report.
func (t *Table) writePlain(ctx context.Context, msgs []*kafka.Message) ([]Position, error) {
	t.wmu.Lock()
	if t.producer != nil && t.perrs.Load().Fatal() != nil {
		// A producer that hit a fatal error cannot send again; a new
		// one can.
		t.closeProducerLocked()
	}
	if t.producer == nil {
		if err := t.newProducerLocked(); err != nil {
			t.wmu.Unlock()
			return nil, err
		}
	}
	p := t.producer
	t.wmu.Unlock()
	dc := make(chan kafka.Event, len(msgs))
	for _, m := range msgs {
		if err := p.Produce(m, dc); err != nil {
			return nil, t.clientErrorf("write %q: %w", m.Key, t.cfg.Client.RedactError(err))
		}
	}
	return t.deliveries(ctx, dc, msgs)
}

// deliveries collects the delivery reports of msgs.
func (t *Table) deliveries(ctx context.Context, dc chan kafka.Event, msgs []*kafka.Message) ([]Position, error) {
	pos := make([]Position, len(msgs))
	for range msgs {
		select {
		case ev := <-dc:
			m, ok := ev.(*kafka.Message)
			if !ok {
				return nil, t.errorf("write: unexpected delivery event %v", ev)
			}
			i := m.Opaque.(int)
			if m.TopicPartition.Error != nil {
				return nil, t.clientErrorf("write %q: %w", msgs[i].Key, t.cfg.Client.RedactError(m.TopicPartition.Error))
			}
			pos[i] = Position{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)}
		case <-ctx.Done():
			return nil, t.clientErrorf("write: waiting for the broker to acknowledge: %w", ctx.Err())
		}
	}
	return pos, nil
}

// writeTxn writes msgs in one transaction; t.wmu is held.
func (t *Table) writeTxn(ctx context.Context, msgs []*kafka.Message) ([]Position, error) {
	p := t.producer
	if p == nil {
		return nil, t.errorf("%w: claim the writes first (transactional.id %q)", ErrNotClaimed, t.cfg.TransactionalID)
	}
	if err := p.BeginTransaction(); err != nil {
		return nil, t.txnFailed(ctx, "begin a transaction", err, false)
	}
	dc := make(chan kafka.Event, len(msgs))
	for _, m := range msgs {
		if err := p.Produce(m, dc); err != nil {
			return nil, t.txnFailed(ctx, fmt.Sprintf("write %q", m.Key), err, true)
		}
	}
	for {
		err := p.CommitTransaction(ctx)
		if err == nil {
			break
		}
		var ke kafka.Error
		if errors.As(err, &ke) && ke.IsRetriable() && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return nil, t.txnFailed(ctx, "commit the transaction", err, true)
	}
	return t.deliveries(ctx, dc, msgs)
}

// txnFailed turns a failed transactional call into the write's error and
// leaves the producer usable (aborted) or dropped.
func (t *Table) txnFailed(ctx context.Context, what string, err error, begun bool) error {
	red := t.cfg.Client.RedactError(err)
	var ke kafka.Error
	if errors.As(err, &ke) {
		switch ke.Code() {
		case kafka.ErrFenced, kafka.ErrProducerFenced, kafka.ErrInvalidProducerEpoch:
			t.closeProducerLocked()
			return t.errorf("%w: %s: %w (another worker claimed the writes; this write is not visible)", ErrFenced, what, red)
		}
		if ke.IsFatal() {
			t.closeProducerLocked()
			return t.errorf("%w: %s: %w (the producer hit a fatal error; claim the writes again)", ErrNotClaimed, what, red)
		}
	}
	if begun {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if aerr := t.producer.AbortTransaction(actx); aerr != nil {
			// The outcome of the transaction is unknown; only a new
			// claim settles it (it aborts whatever is open).
			t.closeProducerLocked()
			return t.clientErrorf("%w: %s: %w; abort: %w (claim the writes again)", ErrNotClaimed, what, red, t.cfg.Client.RedactError(aerr))
		}
	}
	return t.clientErrorf("%s: %w (nothing was written)", what, red)
}
