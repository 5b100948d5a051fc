package kafka

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A new consumer with a static id waits for the old one with that id to
// finish closing, and gives up with the id named when it does not.
func TestLeavingWaitsForTheOldConsumer(t *testing.T) {
	l := &leaving{done: map[string]chan struct{}{}}
	ctx := context.Background()
	if err := l.wait(ctx, "floe-c-0-x", time.Second); err != nil {
		t.Fatalf("nothing closing: %v", err)
	}
	finished := l.start("floe-c-0-x")
	if err := l.wait(ctx, "floe-c-1-x", 10*time.Millisecond); err != nil {
		t.Fatalf("another id is closing, not this one: %v", err)
	}
	err := l.wait(ctx, "floe-c-0-x", 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "floe-c-0-x") {
		t.Fatalf("old consumer still closing: got %v, want an error naming the id", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		finished()
	}()
	if err := l.wait(ctx, "floe-c-0-x", 5*time.Second); err != nil {
		t.Fatalf("old consumer closed within the wait: %v", err)
	}
	if len(l.done) != 0 {
		t.Errorf("closed consumers stay tracked: %v", l.done)
	}
	if finished := l.start(""); finished == nil {
		t.Error("no static id: want a no-op, got nil")
	}
}
