package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// errClosed is Read's answer after Close.
var errClosed = errors.New("kafka: task is closed")

// Read implements [sdk.SourceTask]: it hands on up to maxBatches batches of the
// partitions that have one ready (a full batch.size, or records older than
// batch.linger.ms), oldest first, waiting until some are ready or ctx
// ends. Records are decoded here, on the Read goroutine, while the poll
// goroutine keeps filling the buffer.
//
// It fails with the error of a refused dead letter (errors.tolerance=none),
// a tombstone under behavior.on.null.values=fail, a host that cannot
// answer, a registry down for longer than schema.registry.retry.timeout.ms,
// or a consumer failure.
func (t *task) Read(ctx context.Context, maxBatches int) ([]sdk.Batch, error) {
	if t.closed {
		return nil, errClosed
	}
	maxBatches = max(maxBatches, 1)
	for {
		if err := t.buf.err(); err != nil {
			return nil, err
		}
		out, retryIn, err := t.form(ctx, maxBatches)
		if err != nil {
			releaseBatches(out)
			return nil, err
		}
		if len(out) > 0 || ctx.Err() != nil {
			sdk.CrashPoint("kafka.after-read") // crash tests: batches formed, positions moved on
			return out, nil
		}
		// Wait for the first linger to end, a full batch (ready), or the
		// next registry attempt, whichever comes first.
		wait := time.Minute
		if _, due := t.buf.readyParts(t.now()); due > 0 {
			wait = max(due-t.now(), time.Millisecond)
		}
		if retryIn > 0 {
			wait = min(wait, retryIn)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case <-t.buf.ready:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// form makes up to maxBatches batches from the ready partitions, taking
// them in turn. retryIn is set when a partition waits for the registry.
func (t *task) form(ctx context.Context, maxBatches int) (out []sdk.Batch, retryIn time.Duration, err error) {
	skip := map[*partition]bool{}
	for len(out) < maxBatches {
		ready, _ := t.buf.readyParts(t.now())
		progressed := false
		for _, p := range ready {
			if len(out) >= maxBatches {
				break
			}
			if skip[p] {
				continue
			}
			b, ok, err := t.formBatch(ctx, p)
			var down *registryDownError
			switch {
			case errors.As(err, &down):
				retryIn = t.schemas.retryIn()
				skip[p] = true
				continue
			case err != nil && ctx.Err() != nil:
				return out, 0, nil
			case err != nil:
				return out, 0, err
			case !ok:
				skip[p] = true
				continue
			}
			out = append(out, b)
			progressed = true
		}
		if !progressed {
			break
		}
	}
	return out, retryIn, nil
}

// formBatch makes p's next batch from its buffered head: a run of records
// of one value schema, at most batch.size records, ending before the next
// schema change. Bad records inside the run are dead-lettered and counted
// in Skipped. ok is false when there is nothing to hand on (p was revoked,
// or the registry must be waited for: err is then a *registryDownError).
func (t *task) formBatch(ctx context.Context, p *partition) (b sdk.Batch, ok bool, err error) {
	recs, from, ok := t.buf.peek(p, t.set.batchSize)
	if !ok || len(recs) == 0 {
		return sdk.Batch{}, false, nil
	}
	if from < 0 {
		from = recs[0].offset
	}
	t.bb.vs = nil
	var (
		vs      *valueSchema
		bb      = &t.bb
		letters []sdk.DeadLetter
		skipped int64
		n       int   // records taken into the batch
		stop    error // why the run ended early, if it did
	)
	defer func() {
		if err != nil || !ok {
			bb.discard()
		}
	}()
loop:
	for i := range recs {
		r := &recs[i]
		switch {
		case r.value == nil:
			switch t.set.nullValues {
			case NullValuesIgnore:
				skipped++
				t.log.Debug("kafka: tombstone skipped (behavior.on.null.values=ignore)", "partition", p.name, "offset", r.offset, "key", quoteKey(r.key))
			case NullValuesFail:
				return sdk.Batch{}, false, nullValueError(p, r)
			default:
				letters = append(letters, deadLetter(p, r, stageDeserialize,
					"the value is null (a tombstone); "+KeyNullValues+"="+NullValuesDLQ))
			}
		case r.schemaID == noSchema:
			letters = append(letters, deadLetter(p, r, stageDeserialize, unframedCause(r.value)))
		default:
			s, err := t.schemas.get(ctx, r.schemaID, p.topic)
			if err != nil {
				stop = err
				break loop
			}
			if s.stage != "" {
				letters = append(letters, deadLetter(p, r, s.stage, s.reason))
				break
			}
			if vs == nil {
				vs = s
				bb.start(t.mem, vs, recs[i:])
			} else if s != vs {
				break loop // a schema change starts the next batch
			}
			key, err := t.key(r.key)
			if err != nil {
				letters = append(letters, deadLetter(p, r, stageDeserialize, "key: "+err.Error()))
				break
			}
			if err := bb.add(r, key); err != nil {
				var rebuild *errRebuild
				if errors.As(err, &rebuild) {
					return sdk.Batch{}, false, fmt.Errorf("kafka: topic %s partition %d: %w", p.topic, p.partition, rebuild)
				}
				letters = append(letters, deadLetter(p, r, stageDeserialize, "schema id "+strconv.Itoa(int(r.schemaID))+": "+err.Error()))
			}
		}
		n = i + 1
	}
	if n == 0 {
		// The first record's schema could not be resolved.
		return sdk.Batch{}, false, stop
	}
	var down *registryDownError
	if stop != nil && !errors.As(stop, &down) && ctx.Err() == nil {
		return sdk.Batch{}, false, stop
	}

	b = sdk.Batch{Partition: p.name, From: from, Next: recs[n-1].offset + 1, Skipped: skipped + int64(len(letters))}
	if vs != nil {
		b.SchemaID = int64(vs.id)
		b.Records, err = bb.finish()
		if err != nil {
			return sdk.Batch{}, false, err
		}
	}
	release := func() {
		if b.Records != nil {
			b.Records.Release()
		}
	}
	if len(letters) > 0 {
		if err := t.host.DeadLetter(ctx, letters); err != nil {
			release()
			if ctx.Err() != nil {
				// Not refused: the Read ended. The run stays buffered and
				// is formed again by the next Read.
				return sdk.Batch{}, false, nil
			}
			return sdk.Batch{}, false, deadLetterError(letters, err)
		}
	}
	if !t.buf.take(p, n, b.Next) {
		release()
		return sdk.Batch{}, false, nil
	}
	return b, true, nil
}

// key returns the __key value of a record key under key.format.
func (t *task) key(k []byte) ([]byte, error) {
	if t.set.keyFormat != KeyFormatAvro || k == nil {
		return k, nil
	}
	_, payload, err := schemas.SplitConfluent(k)
	if err != nil {
		return nil, err
	}
	return payload, nil
}

func releaseBatches(bs []sdk.Batch) {
	for _, b := range bs {
		if b.Records != nil {
			b.Records.Release()
		}
	}
}
