package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// role keeps one plugin process of a connector running: the source,
// partitioner, sink or maintenance process. It restarts a crashed process
// with a doubling backoff, up to plugin.restart.max.attempts consecutive
// crashes, after which the role has failed for good and every waiter gets
// the reason.
//
// A role only manages the process; whoever uses it reopens its own tasks
// after a restart, by waiting in [role.await] for a newer generation.
type role struct {
	kind      sdk.Kind
	component string
	c         *Connector
	logger    *slog.Logger

	mu      sync.Mutex
	proc    Process
	gen     int           // counts processes started; 0 before the first
	err     error         // terminal: restarts exhausted
	changed chan struct{} // closed and replaced whenever proc or err changes
	done    chan struct{} // closed when the supervisor returns
}

func newRole(c *Connector, kind sdk.Kind, component string) *role {
	return &role{
		kind: kind, component: component, c: c,
		logger:  c.logger.With("plugin", component, "kind", string(kind)),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// supervise starts the process and restarts it until ctx ends; then it
// kills the process. It runs in its own goroutine.
func (r *role) supervise(ctx context.Context) {
	defer close(r.done)
	set := r.c.settings
	attempts := 0 // consecutive failed starts or short-lived processes
	for {
		proc, err := r.start(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			attempts++
			r.logger.Error("plugin process did not start", "attempt", attempts, "error", err)
			if attempts > set.RestartMaxAttempts {
				r.fail(fmt.Errorf("%s plugin %q could not be started (%d attempts): %w", r.kind, r.component, attempts, err))
				return
			}
			if !sleepCtx(ctx, backoff(set.RestartBackoff, attempts)) {
				return
			}
			continue
		}
		started := time.Now()
		r.set(proc)
		select {
		case <-ctx.Done():
			proc.Kill()
			return
		case <-proc.Exited():
		}
		if ctx.Err() != nil {
			return
		}
		reason := proc.ExitReason()
		if time.Since(started) >= r.c.opts.Tuning.RestartStableAfter {
			attempts = 0
		}
		attempts++
		r.logger.Error("plugin process exited", "reason", reason, "restart", attempts, "max_attempts", set.RestartMaxAttempts)
		if attempts > set.RestartMaxAttempts {
			r.fail(fmt.Errorf("%s plugin %q exited and was restarted %d times (plugin.restart.max.attempts); last exit: %s",
				r.kind, r.component, set.RestartMaxAttempts, reason))
			return
		}
		r.c.progress.pluginRestarts.Add(1)
		r.c.metrics.PluginRestart(string(r.kind))
		if !sleepCtx(ctx, backoff(set.RestartBackoff, attempts)) {
			return
		}
	}
}

func (r *role) start(ctx context.Context) (Process, error) {
	lim := r.c.settings.Processes[r.kind]
	return r.c.opts.Plugins.Start(ctx, r.kind, r.component, client.StartOptions{
		Env:    lim.Env(),
		Nice:   lim.Nice,
		Logger: r.c.opts.Logger,
		Labels: []any{"connector", r.c.opts.Name, "plugin", r.component},
	})
}

func (r *role) set(p Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proc = p
	r.gen++
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *role) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	close(r.changed)
	r.changed = make(chan struct{})
}

// current returns the live process, or nil between processes.
func (r *role) current() Process {
	r.mu.Lock()
	proc := r.proc
	r.mu.Unlock()
	if proc == nil {
		return nil
	}
	select {
	case <-proc.Exited():
		return nil
	default:
		return proc
	}
}

// await returns a live process newer than generation after (pass 0 for
// any), waiting while the role restarts it. It fails when restarts are
// exhausted or ctx ends.
func (r *role) await(ctx context.Context, after int) (Process, int, error) {
	for {
		r.mu.Lock()
		proc, gen, err, ch := r.proc, r.gen, r.err, r.changed
		r.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		if proc != nil && gen > after {
			select {
			case <-proc.Exited():
			default:
				return proc, gen, nil
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-r.done:
			r.mu.Lock()
			err := r.err
			r.mu.Unlock()
			if err == nil {
				err = errors.New("connector stopping")
			}
			return nil, 0, err
		}
	}
}

// backoff returns base doubled per attempt after the first, capped.
func backoff(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < MaxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, MaxRestartBackoff)
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
