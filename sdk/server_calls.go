package sdk

import (
	"context"
	"log/slog"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// calls tracks the calls in flight on one open task, so that its Close
// never overlaps them, as every task interface promises. The host cannot
// promise it by itself: when it gives up on a call (its ctx ended, a
// sibling plugin died) gRPC returns on the host's side at once, while the
// plugin's handler may still be running, and the host's next call may be
// Close.
//
// Every call but Close runs between begin and its end function, with a
// ctx that Close cancels, so it returns promptly. Close stops new calls,
// cancels those in flight and runs the task's Close only once they have
// all returned.
type calls struct {
	// one, for tasks whose calls never overlap (a source's Read and
	// Commit), makes a call that arrives while another runs wait for it.
	one sync.Mutex

	mu      sync.Mutex
	next    uint64
	active  map[uint64]context.CancelFunc
	closing bool
	idle    chan struct{} // made when closing starts; closed once active is empty
	// late is the task's Close, when Close gave up waiting: the last
	// call to return runs it.
	late func()
}

// tracked is an open task's entry in its kind's handle table.
type tracked interface {
	inflight() *calls
}

// enter looks an open task up and begins a call on it; the caller must
// use the returned ctx and defer end. A source's calls are serial (its
// contract says the host never overlaps them, and the Read protocol's
// pending batches rely on it); the other kinds' calls may overlap, as
// their contracts allow.
func enter[T tracked](ctx context.Context, h *handles[T], kind Kind, handle uint64) (e T, _ context.Context, end func(), _ error) {
	e, err := h.get(kind, handle)
	if err != nil {
		return e, nil, nil, err
	}
	ctx, end, err = e.inflight().begin(ctx, kind == KindSource, kind, handle)
	if err != nil {
		return e, nil, nil, err
	}
	return e, ctx, end, nil
}

// begin starts a call. The call must use the returned ctx and call end
// when it returns. When serial is set the call also waits for the task's
// other serial calls to return first. A task that is closing refuses new
// calls with NotFound, as a closed one does.
func (c *calls) begin(ctx context.Context, serial bool, kind Kind, handle uint64) (context.Context, func(), error) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil, nil, closedError(kind, handle)
	}
	if c.active == nil {
		c.active = map[uint64]context.CancelFunc{}
	}
	cctx, cancel := context.WithCancel(ctx)
	id := c.next
	c.next++
	c.active[id] = cancel
	c.mu.Unlock()

	end := func() {
		cancel()
		c.mu.Lock()
		delete(c.active, id)
		var late func()
		if c.closing && len(c.active) == 0 {
			close(c.idle)
			late, c.late = c.late, nil
		}
		c.mu.Unlock()
		if late != nil {
			late()
		}
	}
	if serial {
		c.one.Lock()
		unlock := end
		end = func() { c.one.Unlock(); unlock() }
		if err := cctx.Err(); err != nil {
			// Close (or the host) ended the call while it waited its turn.
			end()
			return nil, nil, status.FromContextError(err).Err()
		}
	}
	return cctx, end, nil
}

// close runs closeTask once no call is in flight: it refuses new calls,
// cancels those in flight and waits for them. When ctx ends first (a call
// ignores its cancelled ctx), it returns an error, and closeTask runs when
// that call returns, with a ctx that keeps ctx's values and lasts
// closeTimeout; log receives its error then.
func (c *calls) close(ctx context.Context, label string, log *slog.Logger, closeTask func(context.Context) error) error {
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		c.idle = make(chan struct{})
		if len(c.active) == 0 {
			close(c.idle)
		}
	}
	for _, cancel := range c.active {
		cancel()
	}
	idle := c.idle
	c.mu.Unlock()

	select {
	case <-idle:
		return closeTask(ctx)
	case <-ctx.Done():
	}
	// Close's own ctx is over; the task's Close gets a fresh while.
	closeLate := func() error {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		return closeTask(lctx)
	}
	c.mu.Lock()
	select {
	case <-idle:
		// The last call returned just now.
		c.mu.Unlock()
		return closeLate()
	default:
	}
	n := len(c.active)
	c.late = func() {
		if err := closeLate(); err != nil {
			log.Warn("closing a task after its last call returned", "what", label, "error", err)
		}
	}
	c.mu.Unlock()
	return status.Errorf(codes.DeadlineExceeded,
		"%s: Close waited for %d call(s) in flight, which did not return after their ctx was cancelled; "+
			"the task closes when they return (its methods must return when ctx ends)", label, n)
}

// closedError is the answer to a call on a task that is closed or closing.
func closedError(kind Kind, handle uint64) error {
	return status.Errorf(codes.NotFound,
		"no open %s task with handle %d in this plugin process (it was closed, or the process restarted since Open)", kind, handle)
}
