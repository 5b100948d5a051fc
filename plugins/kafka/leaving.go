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
