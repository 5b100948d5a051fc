package dlq

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

// letterKey identifies a dead letter among those in flight.
type letterKey struct {
	partition string
	offset    int64
	stage     string
}

// delivery is the broker's answer for one produced dead letter.
type delivery struct {
	key  letterKey
	once sync.Once
	done chan struct{} // closed once err is set
	err  error
}

// finish sets the answer; later answers are ignored.
func (d *delivery) finish(err error) {
	d.once.Do(func() {
		d.err = err
		close(d.done)
	})
}

// rememberedLetters bounds how many answered deliveries are remembered
// for Reports retried with the same records.
const rememberedLetters = 1 << 16

// produce sends the records not sent yet and waits for every delivery
// report. A record a retried Report already sent is not sent again: its
// delivery is waited for, or its answer taken (a failed delivery is
// reported once, then forgotten so that a later Report sends it anew).
func (r *Reporter) produce(ctx context.Context, p *kafka.Producer, o Origin, records []sdk.DeadLetter) error {
	waits := make([]*delivery, 0, len(records))
	for _, rec := range records {
		key := letterKey{partition: rec.Partition, offset: rec.Offset, stage: rec.Stage}
		r.mu.Lock()
		d, sent := r.letters[key]
		if !sent {
			d = &delivery{key: key, done: make(chan struct{})}
			r.letters[key] = d
		}
		r.mu.Unlock()
		waits = append(waits, d)
		if sent {
			continue
		}
		if r.cfg.LogEnable { // once, not per retry
			r.log(o, rec)
		}
		m := message(r.cfg.Topic, o, rec, r.cfg.ContextHeaders)
		m.Opaque = d
		for {
			err := p.Produce(m, nil)
			if err == nil {
				break
			}
			var kerr kafka.Error
			if errors.As(err, &kerr) && kerr.Code() == kafka.ErrQueueFull {
				// The local queue drains as the broker acknowledges.
				select {
				case <-ctx.Done():
					r.forget(d)
					return r.errorf("waiting for room in the producer's queue: %w", ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			r.forget(d)
			if errors.As(err, &kerr) && (kerr.IsFatal() || kerr.Code() == kafka.ErrFatal) {
				r.retire(p)
			}
			return r.settle(r.errorf("produce %s@%d: %w", rec.Partition, rec.Offset, err), err)
		}
	}
	var failed *delivery
	for _, d := range waits {
		if !answered(d) {
			select {
			case <-ctx.Done():
				return r.errorf("waiting for the broker to acknowledge %d dead letters: %w", len(records), ctx.Err())
			case <-d.done:
			}
		}
		if d.err != nil && failed == nil {
			failed = d
		}
	}
	if failed != nil {
		for _, d := range waits {
			if d.err != nil {
				r.forget(d)
			}
		}
		return r.settle(r.errorf("delivery of %s@%d failed: %w (check errors.deadletterqueue.producer.* and the broker)", failed.key.partition, failed.key.offset, failed.err), failed.err)
	}
	return nil
}

// answered reports whether the broker answered d, without waiting.
func answered(d *delivery) bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// forget drops a delivery: never produced, or failed and reported.
func (r *Reporter) forget(d *delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.letters[d.key] == d {
		delete(r.letters, d.key)
	}
}

// delivered records the broker's answer for one dead letter; the oldest
// answers beyond rememberedLetters are forgotten.
func (r *Reporter) delivered(m *kafka.Message) {
	d, ok := m.Opaque.(*delivery)
	if !ok {
		return
	}
	d.finish(m.TopicPartition.Error)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answeredKeys = append(r.answeredKeys, d.key)
	for len(r.answeredKeys) > rememberedLetters {
		k := r.answeredKeys[0]
		r.answeredKeys = r.answeredKeys[1:]
		if old := r.letters[k]; old != nil && answered(old) {
			delete(r.letters, k)
		}
	}
}
