package kafka

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// A task restarted under its static group.instance.id is handed the
// assignment the group stored for that id, without a rebalance (KIP-345).
// When its predecessor died between the two halves of a cooperative
// rebalance (it had joined, and the partitions revoked for it had yet to
// be handed on), that assignment is empty and the revoked partitions
// belong to nobody, for good: no member has a reason to rejoin. The crash
// test met it after a kill -9 a second after the start (one task held
// three partitions, the other none, for three minutes). A closing task
// leaves the group (leaveGroup); a killed one cannot, so the successor
// watches instead: a consumer that holds no partition for starvedAfter
// while its topics have at least one partition per task leaves the group
// and joins again, which makes the group rebalance the orphans.

// starvedAfter is how long the task's consumer may hold no partition,
// while its topics have one per task, before it joins the group again:
// three session timeouts, well past the legitimate waits (a dead member's
// partitions move after one).
func (t *task) starvedAfter() time.Duration {
	ms, err := strconv.Atoi(fmt.Sprint(t.set.kafka["session.timeout.ms"]))
	if err != nil || ms <= 0 {
		ms = 10_000
	}
	return 3 * time.Duration(ms) * time.Millisecond
}

// starveCheckEvery paces the check on the poll goroutine.
const starveCheckEvery = time.Second

// checkStarved runs on the poll goroutine, at most every
// starveCheckEvery: it rejoins the group when the consumer has held no
// partition for starvedAfter while its topics have one per task.
func (t *task) checkStarved(now time.Time) {
	if now.Sub(t.starveChecked) < starveCheckEvery || t.closing.Load() {
		return
	}
	t.starveChecked = now
	if parts, err := t.c.Assignment(); err != nil || len(parts) > 0 {
		t.emptySince = time.Time{}
		return
	}
	if t.emptySince.IsZero() {
		t.emptySince = now
		return
	}
	if now.Sub(t.emptySince) < t.starvedAfter() {
		return
	}
	t.emptySince = now // the next look, if any, is starvedAfter from now
	total, err := t.subscribedPartitions()
	if err != nil {
		t.log.Debug("kafka: count the subscribed partitions", "error", err)
		return
	}
	if total < t.tasks {
		return // some tasks rightly hold none
	}
	t.log.Warn("kafka: this task's consumer has held no partition although its topics have one per task; "+
		"joining the group again so that it rebalances partitions nobody reads (a predecessor killed inside a rebalance)",
		"group", t.set.groupID, "for", t.starvedAfter(), "partitions", total, "tasks", t.tasks)
	if err := t.c.Unsubscribe(); err != nil {
		t.log.Warn("kafka: leave the group to join again", "error", err)
		return
	}
	// Let the leave go out before the join, so the group sees a change.
	for i := 0; i < 5; i++ {
		if ev := t.c.Poll(50); ev != nil {
			t.handle(ev)
		}
	}
	if err := t.subscribe(t.c); err != nil {
		t.buf.fail(err)
	}
}

// subscribedPartitions counts the partitions of the task's topics (or of
// those its pattern matches).
func (t *task) subscribedPartitions() (int, error) {
	const timeoutMs = 5_000
	if t.set.topicsRegex == "" {
		total := 0
		for _, topic := range t.set.topics {
			md, err := t.c.GetMetadata(&topic, false, timeoutMs)
			if err != nil {
				return 0, err
			}
			total += len(md.Topics[topic].Partitions)
		}
		return total, nil
	}
	re, err := regexp.Compile(t.set.topicsRegex)
	if err != nil {
		return 0, err
	}
	md, err := t.c.GetMetadata(nil, true, timeoutMs)
	if err != nil {
		return 0, err
	}
	total := 0
	for name, tm := range md.Topics {
		if re.MatchString(name) {
			total += len(tm.Partitions)
		}
	}
	return total, nil
}
