package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// T lets the benchmark program use package harness, whose helpers take a
// testing.TB, outside `go test`. It implements the methods the harness
// calls; Fatal and FailNow end the current section (see [Run]) instead
// of the goroutine. Only the section's own goroutine may call Fatal.
//
// testing.TB has an unexported method, so T embeds a nil testing.TB to
// satisfy the interface; a method T does not implement panics with a
// nil dereference, which names it.
type T struct {
	testing.TB
	name string
	log  io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	skipped  bool
	ctx      context.Context
	cancel   context.CancelFunc
}

// sectionEnd is the panic value of Fatal, FailNow and Skip.
type sectionEnd struct {
	msg  string
	skip bool
}

// Run runs fn as section name with a fresh T, then its cleanups (last
// registered first, as testing does). It returns an error when fn
// failed, skipped (the error says so) or panicked; cleanups run anyway.
func Run(name string, log io.Writer, fn func(t *T)) (err error) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &T{name: name, log: log, ctx: ctx, cancel: cancel}
	defer func() {
		t.cancel()
		if cerr := t.runCleanups(); cerr != nil && err == nil {
			err = cerr
		}
		if err == nil && t.Failed() {
			err = fmt.Errorf("%s: failed (see the log above)", name)
		}
	}()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if end, ok := r.(sectionEnd); ok {
			if end.skip {
				err = fmt.Errorf("%s: skipped: %s", name, end.msg)
			} else {
				err = fmt.Errorf("%s: %s", name, end.msg)
			}
			return
		}
		err = fmt.Errorf("%s: panic: %v\n%s", name, r, debug.Stack())
	}()
	fn(t)
	return nil
}

func (t *T) runCleanups() (err error) {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return err
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		func() {
			defer func() {
				if r := recover(); r != nil {
					if end, ok := r.(sectionEnd); ok {
						err = fmt.Errorf("%s: cleanup: %s", t.name, end.msg)
					} else {
						err = fmt.Errorf("%s: cleanup panicked: %v", t.name, r)
					}
				}
			}()
			f()
		}()
	}
}

// Name is the section's name.
func (t *T) Name() string { return t.name }

// Helper does nothing.
func (t *T) Helper() {}

// Logf logs a line with the time, to the log writer.
func (t *T) Logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		_, _ = fmt.Fprintf(t.log, "%s %s: %s\n", time.Now().Format("15:04:05"), t.name, line) // a lost log line does not change the figures
	}
}

// Log logs its arguments.
func (t *T) Log(args ...any) { t.Logf("%s", fmt.Sprintln(args...)) }

// Errorf logs and marks the section failed; it goes on.
func (t *T) Errorf(format string, args ...any) {
	t.Logf("ERROR: "+format, args...)
	t.Fail()
}

// Error logs and marks the section failed.
func (t *T) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }

// Fail marks the section failed.
func (t *T) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

// Failed reports whether the section failed.
func (t *T) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Fatalf logs, marks the section failed and ends it.
func (t *T) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Logf("FATAL: %s", msg)
	t.Fail()
	panic(sectionEnd{msg: firstLine(msg)})
}

// Fatal is Fatalf with Sprint.
func (t *T) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

// FailNow ends the section as failed.
func (t *T) FailNow() {
	t.Fail()
	panic(sectionEnd{msg: "failed"})
}

// Skipf ends the section as skipped.
func (t *T) Skipf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Logf("SKIP: %s", msg)
	t.mu.Lock()
	t.skipped = true
	t.mu.Unlock()
	panic(sectionEnd{msg: firstLine(msg), skip: true})
}

// Skip is Skipf with Sprint.
func (t *T) Skip(args ...any) { t.Skipf("%s", fmt.Sprint(args...)) }

// SkipNow ends the section as skipped.
func (t *T) SkipNow() { t.Skipf("skipped") }

// Skipped reports whether the section was skipped.
func (t *T) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

// Cleanup registers f to run when the section ends.
func (t *T) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// TempDir returns a new temporary folder, removed when the section ends.
func (t *T) TempDir() string {
	dir, err := os.MkdirTemp("", "floebench-"+safe(t.name)+"-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Setenv sets an environment variable until the section ends.
func (t *T) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	_ = os.Setenv(key, value)
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, old)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}

// Context ends when the section ends.
func (t *T) Context() context.Context { return t.ctx }

// Output is the log writer.
func (t *T) Output() io.Writer { return t.log }

// Attr logs a key and value.
func (t *T) Attr(key, value string) { t.Logf("%s=%s", key, value) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// Retry runs fn in a sub-section of t (its own cleanups: a failed floe
// run's processes are gone before the next attempt) up to attempts
// times, until one completes. It returns the errors of the failed
// attempts, and fails t when every attempt failed. A benchmark records
// those failures in its report: a floe run that fails is a finding, and
// the retry keeps the other measurements.
func (t *T) Retry(attempts int, what string, fn func(t *T)) []error {
	var errs []error
	for i := range attempts {
		err := Run(fmt.Sprintf("%s/%s#%d", t.name, what, i+1), t.log, fn)
		if err == nil {
			return errs
		}
		t.Logf("%s: attempt %d of %d failed: %v", what, i+1, attempts, err)
		errs = append(errs, err)
	}
	t.Fatalf("%s: every attempt failed; the last: %v", what, errs[len(errs)-1])
	return errs
}
