package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/floehq/floe/sdk"
)

// Checkpoint is one flushed checkpoint on its way from the writers to the
// committer: phase 1 is done, phase 2 is not.
type Checkpoint struct {
	ID uint64
	// Ranges holds, per source partition that advanced, what the
	// checkpoint covers; each From is the previous checkpoint's Next.
	Ranges []sdk.Range
	// Origins lists the partitions whose range starts where the source
	// began on its own: no position was known for them, so nothing of
	// them was committed or read before in this session.
	Origins []string
	// Results are the writers' descriptions of their files, for Commit.
	Results []sdk.WriteResult
	Records int64
	Bytes   int64
	Files   int
	// Barrier is when the barrier was taken; Oldest is when the oldest
	// batch of the checkpoint was received (for the commit lag).
	Barrier time.Time
	Oldest  time.Time
}

// ErrChannelClosed is returned by [ResultChannel.Receive] once the channel
// is closed and every checkpoint sent before was received.
var ErrChannelClosed = errors.New("result channel closed")

// ResultChannel carries flushed checkpoints to the committer, in
// checkpoint order. In standalone mode it is an in-memory queue
// ([NewMemoryChannel]); in distributed mode a Kafka topic will carry the
// writers' results of every worker to the one committer of a connector.
//
// Send is called from one goroutine (the checkpointer) and Receive from
// one other (the committer). Bounding how many checkpoints wait is the
// caller's job (checkpoint.max.pending), not the channel's.
type ResultChannel interface {
	// Send hands on a flushed checkpoint. ctx bounds a blocked send.
	Send(ctx context.Context, cp Checkpoint) error
	// Receive returns the next checkpoint, waiting until one is sent, the
	// channel is closed and drained ([ErrChannelClosed]) or ctx ends.
	Receive(ctx context.Context) (Checkpoint, error)
	// Close ends the channel after the checkpoints already sent.
	Close()
}

// memoryChannel is the in-process [ResultChannel].
type memoryChannel struct {
	mu     sync.Mutex
	queue  []Checkpoint
	closed bool
	ready  chan struct{} // closed and replaced on every Send and on Close
}

// NewMemoryChannel returns an in-memory [ResultChannel]. It never blocks
// a sender: the runtime bounds pending checkpoints before the barrier.
func NewMemoryChannel() ResultChannel {
	return &memoryChannel{ready: make(chan struct{})}
}

func (m *memoryChannel) Send(_ context.Context, cp Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrChannelClosed
	}
	m.queue = append(m.queue, cp)
	close(m.ready)
	m.ready = make(chan struct{})
	return nil
}

func (m *memoryChannel) Receive(ctx context.Context) (Checkpoint, error) {
	for {
		m.mu.Lock()
		if len(m.queue) > 0 {
			cp := m.queue[0]
			m.queue = m.queue[1:]
			m.mu.Unlock()
			return cp, nil
		}
		if m.closed {
			m.mu.Unlock()
			return Checkpoint{}, ErrChannelClosed
		}
		ready := m.ready
		m.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return Checkpoint{}, ctx.Err()
		}
	}
}

func (m *memoryChannel) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		close(m.ready)
		m.ready = make(chan struct{})
	}
}
