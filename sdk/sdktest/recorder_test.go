package sdktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder is a fake test for the kits' own tests: it records failures
// per subtest instead of failing, so a test can assert that a kit caught a
// broken plugin. Methods the kits do not use panic (through the nil
// embedded testing.TB).
type recorder struct {
	testing.TB
	name string
	log  *recordLog

	mu       sync.Mutex
	failed   bool
	skipped  bool
	cleanups []func()
	parent   *recorder
}

// recordLog is shared by a recorder and its subtests.
type recordLog struct {
	mu       sync.Mutex
	failures []string // "path: message"
	logs     []string
}

func newRecorder(name string) *recorder {
	return &recorder{name: name, log: &recordLog{}}
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }

func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Fail()                             { r.fail("Fail") }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) FailNow()          { r.fail("FailNow"); runtime.Goexit() }
func (r *recorder) Skipf(format string, args ...any) {
	r.skip(fmt.Sprintf(format, args...))
}
func (r *recorder) Skip(args ...any) { r.skip(fmt.Sprint(args...)) }
func (r *recorder) SkipNow()         { r.skip("SkipNow") }
func (r *recorder) Logf(format string, args ...any) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.logs = append(r.log.logs, r.name+": "+fmt.Sprintf(format, args...))
}
func (r *recorder) Log(args ...any) { r.Logf("%s", fmt.Sprint(args...)) }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) TempDir() string {
	dir, err := os.MkdirTemp("", "sdktest-recorder")
	if err != nil {
		panic(err)
	}
	r.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (r *recorder) fail(msg string) {
	r.log.mu.Lock()
	r.log.failures = append(r.log.failures, r.name+": "+msg)
	r.log.mu.Unlock()
	for p := r; p != nil; p = p.parent {
		p.mu.Lock()
		p.failed = true
		p.mu.Unlock()
	}
}

func (r *recorder) skip(msg string) {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	r.Logf("SKIP: %s", msg)
	runtime.Goexit()
}

func (r *recorder) run(name string, f func(t tb)) bool {
	child := &recorder{name: r.name + "/" + name, log: r.log, parent: r}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer child.runCleanups()
		f(child)
	}()
	<-done
	return !child.Failed()
}

// finish runs the root's cleanups, as the testing package does at the end.
func (r *recorder) finish() { r.runCleanups() }

func (r *recorder) runCleanups() {
	for {
		r.mu.Lock()
		if len(r.cleanups) == 0 {
			r.mu.Unlock()
			return
		}
		f := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		r.mu.Unlock()
		f()
	}
}

// failures returns the recorded failures of subtest check (all of them
// for "").
func (r *recorder) failures(check string) []string {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	var out []string
	prefix := r.name + "/" + check + ": "
	for _, f := range r.log.failures {
		if check == "" || strings.HasPrefix(f, prefix) {
			out = append(out, f)
		}
	}
	return out
}

func (r *recorder) dump(t *testing.T) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	for _, f := range r.log.failures {
		t.Logf("recorded failure: %s", f)
	}
	for _, l := range r.log.logs {
		t.Logf("recorded log: %s", l)
	}
}

// expectCaught asserts that the kit failed check with a message containing
// want.
func expectCaught(t *testing.T, r *recorder, check, want string) {
	t.Helper()
	for _, f := range r.failures(check) {
		if strings.Contains(f, want) {
			return
		}
	}
	r.dump(t)
	t.Errorf("the kit did not fail %q with a message containing %q", check, want)
}

// expectClean asserts that the kit recorded no failure.
func expectClean(t *testing.T, r *recorder) {
	t.Helper()
	if fs := r.failures(""); len(fs) > 0 {
		r.dump(t)
		t.Errorf("the kit failed a conforming plugin %d times", len(fs))
	}
}
