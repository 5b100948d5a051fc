package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/host/dlq"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// writeBatch moves one batch through the chain check, the partitioner
// and the sink, holding the checkpoint gate shared from the check to the
// sink's acknowledgement, so the batch lands wholly in one checkpoint.
// It returns a task error; failures of the sink end the session instead
// (see sinkFailed) and return nil.
func (s *session) writeBatch(r *taskRunner, it item) error {
	s.waitBufferRoom()
	b := it.batch
	for {
		pt, pproc, pgen, err := s.c.part.get(s.ctx)
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("source task %d: %w", r.idx, err)
		}
		retry, err := s.writeLocked(r, it.received, b, pt, pproc)
		if err == nil {
			s.c.noteTopic(s.ctx, b.Partition)
			return nil
		}
		if s.ctx.Err() != nil {
			return nil
		}
		if !retry {
			return err
		}
		// The partitioner process died: reopen it and redo the batch.
		s.c.logger.Warn("partitioner process lost; redoing the batch after its restart", "task", r.idx, "partition", b.Partition, "error", err)
		if err := s.c.part.reopen(s.ctx, pgen); err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("source task %d: partitioner: %w", r.idx, err)
		}
	}
}

// writeLocked is one attempt of writeBatch under the gate. retry reports a
// lost partitioner process.
func (s *session) writeLocked(r *taskRunner, received time.Time, b client.Batch, pt PartitionerTask, pproc Process) (retry bool, err error) {
	pl := s.partitionLock(b.Partition)
	s.gate.RLock()
	defer s.gate.RUnlock()
	pl.Lock()
	defer pl.Unlock()

	b, err = s.chain(b)
	if errors.Is(err, errDropped) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("source task %d: %w", r.idx, err)
	}
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	var rejected []sdk.Rejected
	if b.NumRecords > 0 {
		writers, load, err := pt.Partition(s.ctx, b)
		if err != nil {
			if s.ctx.Err() != nil {
				return false, err
			}
			if processGone(pproc, err) {
				return true, err
			}
			return false, fmt.Errorf("source task %d: partitioner: %w", r.idx, err)
		}
		if len(load) > 0 {
			s.c.progress.setLoad(load)
			s.c.metrics.WriterLoad(load)
		}
		rejected, err = s.sink.Write(s.ctx, epoch, b, writers)
		if err != nil {
			s.sinkFailed(fmt.Sprintf("write of %s [%d, %d) in checkpoint %d", b.Partition, b.From, b.Next, epoch), err)
			return false, err
		}
	}
	s.advance(r.idx, b, received)
	if len(rejected) > 0 {
		// Inside the gate: the checkpoint these records belong to must
		// not commit before they are stored (or the connector fails).
		if err := s.deadLetterRejected(r.idx, b, rejected); err != nil {
			s.abort(fmt.Errorf("sink rejected records of %s and they could not be dead-lettered: %w", b.Partition, err))
			return false, err
		}
	}
	return false, nil
}

// chain checks b against the accepted frontier of its partition: a batch
// that continues it passes, one that overlaps it (a replay) is trimmed to
// the new part or dropped (errDropped), one that leaves a gap is an error
// naming the partition and the missing positions.
func (s *session) chain(b client.Batch) (client.Batch, error) {
	s.mu.Lock()
	acc, ok := s.accepted[b.Partition]
	s.mu.Unlock()
	switch {
	case b.Next < b.From:
		return b, fmt.Errorf("partition %s: batch range [%d, %d) runs backwards", b.Partition, b.From, b.Next)
	case !ok || b.From == acc:
		if b.From == b.Next && b.NumRecords == 0 {
			return b, errDropped
		}
		return b, nil
	case b.From > acc:
		return b, fmt.Errorf("partition %s: gap: the batch starts at %d but everything before %d was accepted, so records [%d, %d) are missing (the source skipped them)",
			b.Partition, b.From, acc, acc, b.From)
	case b.Next <= acc:
		return b, errDropped
	}
	trimmed, err := trimBatch(b, acc)
	if err != nil {
		return b, fmt.Errorf("partition %s: trim the replayed part [%d, %d) of batch [%d, %d): %w", b.Partition, b.From, acc, b.From, b.Next, err)
	}
	return trimmed, nil
}

// advance records a written batch: the accepted frontier moves to its
// Next and the epoch's counters grow.
func (s *session) advance(task int, b client.Batch, received time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.base[b.Partition]; !ok {
		// First batch of a partition the sink did not know: it starts
		// where the source began on its own.
		s.base[b.Partition] = b.From
		s.origins[b.Partition] = true
	}
	s.accepted[b.Partition] = b.Next
	s.owner[b.Partition] = task
	s.epochBytes += b.Size()
	s.epochRecords += b.NumRecords
	if s.epochOldest.IsZero() || received.Before(s.epochOldest) {
		s.epochOldest = received
	}
	if s.epochBytes >= s.c.settings.MaxBufferedBytes {
		select {
		case s.barrierReq <- struct{}{}:
		default:
		}
	}
}

// waitBufferRoom holds a batch back while the epoch holds more than
// checkpoint.max.buffered.bytes, that is while a barrier is due and cannot
// run yet (too many pending checkpoints): ingestion slows instead of
// unflushed data growing.
func (s *session) waitBufferRoom() {
	for {
		s.mu.Lock()
		over := s.epochBytes >= s.c.settings.MaxBufferedBytes
		ch := s.epochCh
		s.mu.Unlock()
		if !over {
			return
		}
		s.requestBarrier()
		select {
		case <-ch:
		case <-s.stopping:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// deadLetterRejected sends the records the sink refused to the dead-letter
// queue (stage "write"), with their key and timestamp when the batch can
// be decoded.
func (s *session) deadLetterRejected(task int, b client.Batch, rejected []sdk.Rejected) error {
	letters := make([]sdk.DeadLetter, len(rejected))
	byOffset := map[int64]int{}
	for i, rj := range rejected {
		letters[i] = sdk.DeadLetter{Partition: b.Partition, Offset: rj.Offset, Stage: "write", Reason: rj.Reason}
		byOffset[rj.Offset] = i
	}
	if rec, err := b.Decode(memory.DefaultAllocator); err == nil {
		fillFromRecords(rec, letters, byOffset)
		rec.Release()
	}
	ctx, cancel := s.c.closeCtx(s.ctx)
	defer cancel()
	err := s.c.dlq.Report(ctx, dlq.Origin{Connector: s.c.opts.Name, Task: task, Component: s.c.opts.Components[sdk.KindSink].Name}, letters)
	if err != nil {
		return err
	}
	s.c.progress.deadLetters.Add(int64(len(letters)))
	s.c.metrics.DeadLetters(len(letters))
	return nil
}

// fillFromRecords copies key and timestamp of rejected rows into letters.
func fillFromRecords(rec arrow.RecordBatch, letters []sdk.DeadLetter, byOffset map[int64]int) {
	sc := rec.Schema()
	col := func(name string) arrow.Array {
		if idx := sc.FieldIndices(name); len(idx) == 1 {
			return rec.Column(idx[0])
		}
		return nil
	}
	offsets, ok := col(sdk.ColumnOffset).(*array.Int64)
	if !ok {
		return
	}
	keys, _ := col(sdk.ColumnKey).(*array.Binary)
	ts, _ := col(sdk.ColumnTimestamp).(*array.Timestamp)
	for row := 0; row < offsets.Len(); row++ {
		i, ok := byOffset[offsets.Value(row)]
		if !ok {
			continue
		}
		if keys != nil && keys.IsValid(row) {
			letters[i].Key = append([]byte(nil), keys.Value(row)...)
		}
		if ts != nil && ts.IsValid(row) {
			letters[i].TimestampMs = int64(ts.Value(row))
		}
	}
}

// trimBatch keeps the rows of b at or after from, re-encoded.
func trimBatch(b client.Batch, from int64) (client.Batch, error) {
	rec, err := b.Decode(memory.DefaultAllocator)
	if err != nil {
		return b, err
	}
	defer rec.Release()
	idx := rec.Schema().FieldIndices(sdk.ColumnOffset)
	if len(idx) != 1 {
		return b, fmt.Errorf("the batch has no %s column", sdk.ColumnOffset)
	}
	offsets, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return b, fmt.Errorf("column %s is %s, not int64", sdk.ColumnOffset, rec.Column(idx[0]).DataType())
	}
	first := int64(0)
	for first < int64(offsets.Len()) && offsets.Value(int(first)) < from {
		first++
	}
	slice := rec.NewSlice(first, rec.NumRows())
	defer slice.Release()
	out, err := client.EncodeBatch(b.Partition, from, b.Next, b.SchemaID, slice)
	if err != nil {
		return b, err
	}
	// Skipped records of the dropped part were dead-lettered already;
	// their count only feeds statistics, so the kept part keeps none.
	out.Skipped = 0
	return out, nil
}
