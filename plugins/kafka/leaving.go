package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// leaving tracks the consumers of this process that are still closing,
// by group.instance.id. A consumer whose Close timed out (a broker down)
// goes on leaving in the background; a new consumer that joined with the
// same static id meanwhile would fence it, be fenced by it in turn, and
// so on, each fence failing a task (seen with a Kafka node killed under
// a 3-node cluster: four restarts of one task in two minutes). Open
// therefore waits for the old one first.
type leaving struct {
	mu   sync.Mutex
	done map[string]chan struct{}
}

var closingConsumers = &leaving{done: map[string]chan struct{}{}}

// leaveWait bounds how long Open waits for an earlier consumer with the
// same static id to finish closing.
const leaveWait = 30 * time.Second

// start records that the consumer of id begins to close and returns the
// function to call once it has.
func (l *leaving) start(id string) (finished func()) {
	if id == "" {
		return func() {}
	}
	ch := make(chan struct{})
	l.mu.Lock()
	l.done[id] = ch
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		if l.done[id] == ch {
			delete(l.done, id)
		}
		l.mu.Unlock()
		close(ch)
	}
}

// wait returns once no consumer of id is closing, or an error naming the
// id when one still is after within (or ctx ends).
func (l *leaving) wait(ctx context.Context, id string, within time.Duration) error {
	l.mu.Lock()
	ch := l.done[id]
	l.mu.Unlock()
	if ch == nil {
		return nil
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return fmt.Errorf("kafka: the task's previous consumer (group.instance.id %s) is still leaving the group after %s; "+
		"a new one with the same id would fence it (the brokers may be unreachable); try again", id, within)
}

// leaveTimeout bounds how long Close waits for the consumer to give its
// partitions up and leave the group before it closes it anyway.
const leaveTimeout = 5 * time.Second

// leaveGroup makes the task's consumer leave its group before it closes,
// on the closing goroutine (the poll goroutine has stopped). A static
// member's close alone does not leave (KIP-345): its partitions would
// wait out the session timeout when the task does not come back under
// the same group.instance.id (it moved to another worker, tasks.max was
// lowered), and a member that closed between the two halves of a
// cooperative rebalance (it gave partitions up and had yet to rejoin so
// they could be handed on) left them to nobody, for good: its successor
// under the same id is handed the member's assignment without a
// rebalance. The distributed soak met that: a share restarted for a
// config change right after such a revocation, and three of six
// partitions were read by no task. Unsubscribing does leave, even for a
// static member; a task that crashed still comes back under its id and
// takes its partitions back at once. The revocation this causes runs here
// (t.closing: the host is not asked).
func (t *task) leaveGroup(ctx context.Context) {
	if err := t.c.Unsubscribe(); err != nil {
		t.log.Debug("kafka: unsubscribe before close", "error", err)
		return
	}
	deadline := time.Now().Add(leaveTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		// Serves the revocation's callback; records still arriving are
		// dropped, as Close drops what the buffer holds.
		t.c.Poll(50)
		if parts, err := t.c.Assignment(); err == nil && len(parts) == 0 {
			// librdkafka sends LeaveGroup once the unassignment is
			// applied, on its own thread: one more turn for that.
			t.c.Poll(50)
			return
		}
	}
	t.log.Warn("kafka: the consumer did not give its partitions up within the close's leave timeout; closing it anyway (its partitions move after the session timeout)",
		"group", t.set.groupID, "timeout", leaveTimeout)
}
