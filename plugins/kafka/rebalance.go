package kafka

import (
	"errors"
	"fmt"
	"strings"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Bounds of the broker calls made while partitions are assigned.
const (
	committedTimeoutMs = 10_000
	committedAttempts  = 3
	watermarkTimeoutMs = 10_000
)

// Where an assigned partition's start position came from, for the log.
const (
	fromFloe  = "floe"  // the host: the sink's committed positions
	fromGroup = "group" // the consumer group's committed offset
)

// rebalance is the consumer's rebalance callback (cooperative protocol:
// each event adds or removes only the partitions that move). It runs
// inside Poll, on the poll goroutine, or inside the consumer's Close. It
// always ends with IncrementalAssign or IncrementalUnassign, so librdkafka
// does not apply the change itself. A consumer the task replaced (see
// replaceFenced) calls it while it closes: its partitions were given up
// already, so it only unassigns them.
func (t *task) rebalance(c *ckafka.Consumer, ev ckafka.Event) error {
	if cur := t.current.Load(); cur == nil || cur.Consumer != c {
		if e, ok := ev.(ckafka.RevokedPartitions); ok {
			_ = c.IncrementalUnassign(e.Partitions)
		}
		return nil
	}
	// Messages polled before this event belong to the old assignment.
	t.flushLocal()
	switch e := ev.(type) {
	case ckafka.AssignedPartitions:
		t.assign(e.Partitions)
	case ckafka.RevokedPartitions:
		t.revoke(e.Partitions)
	}
	return nil
}

func fromKafka(parts []ckafka.TopicPartition) ([]topicPartition, []string) {
	tps := make([]topicPartition, len(parts))
	names := make([]string, len(parts))
	for i, p := range parts {
		tps[i] = topicPartition{topic: topicOf(p), partition: p.Partition}
		names[i] = partitionName(tps[i].topic, p.Partition)
	}
	return tps, names
}

// assign starts consuming new partitions at explicit offsets: where the
// host says (the sink's frontier), else the group's committed offset,
// else the earliest or latest offset (consumer.auto.offset.reset),
// resolved now so that the first batch's From is known. If the host or
// the broker cannot answer, the task fails (Read returns the error) rather
// than guess a position.
func (t *task) assign(parts []ckafka.TopicPartition) {
	if len(parts) == 0 || t.closing.Load() {
		t.incrementalAssign(parts)
		return
	}
	tps, names := fromKafka(parts)
	starts := make([]int64, len(tps))
	offsets := make([]ckafka.Offset, len(tps))
	origin := make([]string, len(tps))

	pos, err := t.host.StartPositions(t.ctx, names)
	if err != nil {
		t.failAssign(parts, fmt.Errorf("kafka: ask floe where partitions %s resume: %w", strings.Join(names, ", "), err))
		return
	}
	var missing []int
	for i, name := range names {
		p, ok := pos[name]
		switch {
		case !ok:
			missing = append(missing, i)
		case p < 0:
			t.failAssign(parts, fmt.Errorf("kafka: floe says partition %s resumes at offset %d, which is negative; check the connector's offsets", name, p))
			return
		default:
			starts[i], origin[i] = p, fromFloe
		}
	}
	if len(missing) > 0 {
		ask := make([]topicPartition, len(missing))
		for j, i := range missing {
			ask[j] = tps[i]
		}
		committed, err := t.committed(ask)
		if err != nil {
			t.failAssign(parts, err)
			return
		}
		for j, i := range missing {
			if off := committed[j]; off >= 0 {
				starts[i], origin[i] = int64(off), fromGroup
				continue
			}
			starts[i], offsets[i], origin[i] = t.resetPosition(tps[i])
		}
	}
	for i := range starts {
		if starts[i] >= 0 {
			offsets[i] = ckafka.Offset(starts[i])
		}
	}
	t.buf.assign(tps, starts)
	kparts := toKafka(tps, offsets)
	if !t.incrementalAssign(kparts) {
		return
	}
	if t.paused.Load() {
		if err := t.c.Pause(kparts); err != nil {
			t.log.Warn("kafka: pause newly assigned partitions failed", "error", err)
		}
	}
	desc := make([]string, len(names))
	for i, name := range names {
		desc[i] = fmt.Sprintf("%s@%d(%s)", name, starts[i], origin[i])
	}
	t.log.Info("kafka: partitions assigned", "partitions", strings.Join(desc, " "))
}

func (t *task) incrementalAssign(parts []ckafka.TopicPartition) bool {
	if err := t.c.IncrementalAssign(parts); err != nil {
		t.buf.fail(fmt.Errorf("kafka: assign partitions: %w", err))
		return false
	}
	return true
}

// failAssign fails the task: the partitions are still assigned (librdkafka
// expects it) but have no buffer state, so their records are dropped.
func (t *task) failAssign(parts []ckafka.TopicPartition, err error) {
	t.buf.fail(err)
	t.log.Error("kafka: cannot start the assigned partitions; the task fails", "error", err)
	t.incrementalAssign(parts)
}

// committed returns the group's committed offset of each partition
// (negative when it has none), retrying a failing broker a few times.
func (t *task) committed(tps []topicPartition) ([]ckafka.Offset, error) {
	var err error
	for attempt := 1; attempt <= committedAttempts; attempt++ {
		var res []ckafka.TopicPartition
		res, err = t.c.Committed(toKafka(tps, nil), committedTimeoutMs)
		if err == nil {
			out := make([]ckafka.Offset, len(tps))
			for i := range out {
				out[i] = ckafka.OffsetInvalid
			}
			for _, r := range res {
				for i, tp := range tps {
					if tp.topic == topicOf(r) && tp.partition == r.Partition && r.Error == nil {
						out[i] = r.Offset
					}
				}
			}
			return out, nil
		}
		if t.ctx.Err() != nil {
			break
		}
		var ke ckafka.Error
		if errors.As(err, &ke) {
			if r := t.set.refusal(ke, ""); r != nil {
				return nil, r
			}
		}
		t.log.Warn("kafka: reading the group's committed offsets failed; retrying", "group", t.set.groupID, "attempt", attempt, "error", err)
		wait(t.ctx, time.Duration(attempt)*time.Second)
	}
	return nil, fmt.Errorf("kafka: read the committed offsets of group %s for %d new partitions: %w; check the brokers and the group's ACLs",
		t.set.groupID, len(tps), err)
}

// resetPosition resolves consumer.auto.offset.reset for a partition with
// no position: the low or high watermark. If the broker cannot tell, the
// partition starts at the logical offset and its first batch begins at the
// first record read.
func (t *task) resetPosition(tp topicPartition) (start int64, offset ckafka.Offset, origin string) {
	low, high, err := t.c.QueryWatermarkOffsets(tp.topic, tp.partition, watermarkTimeoutMs)
	logical := ckafka.OffsetBeginning
	if t.set.autoReset == "latest" {
		logical = ckafka.OffsetEnd
	}
	if err != nil {
		t.log.Warn("kafka: reading the partition's offsets failed; starting at the logical offset", "partition", partitionName(tp.topic, tp.partition),
			"reset", t.set.autoReset, "error", err)
		return -1, logical, t.set.autoReset
	}
	if t.set.autoReset == "latest" {
		return high, ckafka.Offset(high), t.set.autoReset
	}
	return low, ckafka.Offset(low), t.set.autoReset
}

// revoke gives partitions up: their buffered records are dropped, the host
// is told the Next of the last batch handed on per partition and
// checkpoints before it answers, then the consumer unassigns them. When
// the task is closing the host is not asked (it checkpoints on its own
// before closing tasks).
func (t *task) revoke(parts []ckafka.TopicPartition) {
	tps, names := fromKafka(parts)
	next := t.buf.revoke(tps)
	lost := t.c.AssignmentLost()
	if lost {
		t.log.Warn("kafka: partitions lost (the member was out of the group, e.g. a session timeout); another member may already own them",
			"partitions", strings.Join(names, ", "))
	}
	if !t.closing.Load() && len(next) > 0 {
		if err := t.host.PartitionsRevoked(t.ctx, next); err != nil {
			t.log.Warn("kafka: floe could not checkpoint the revoked partitions; whoever takes them resumes from the sink's frontier",
				"partitions", strings.Join(names, ", "), "error", err)
		}
	}
	if err := t.c.IncrementalUnassign(parts); err != nil && !t.closing.Load() {
		t.log.Warn("kafka: unassign partitions failed", "error", err)
	}
	if len(parts) > 0 {
		t.log.Info("kafka: partitions revoked", "partitions", strings.Join(names, ", "), "next", next, "lost", lost)
	}
}
