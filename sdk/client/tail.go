package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// tail keeps the last lines a plugin wrote to stderr, for ExitReason and
// start errors. go-plugin writes each stderr line to it; hclog JSON lines
// are shown as "[LEVEL] message key=value". A Go panic's first lines are
// kept too, since the goroutine dump after them pushes them out of the
// last lines.
type tail struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
	panic   []string // "panic: ..." or "fatal error: ..." and the lines after it
	inPanic bool
}

// panicLines is how many lines of a panic's start are kept.
const panicLines = 8

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := append(t.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		t.add(string(data[:i]))
		data = data[i+1:]
	}
	// Keep an unfinished line, but not without bound.
	if len(data) > 64<<10 {
		t.add(string(data))
		data = nil
	}
	t.partial = append([]byte(nil), data...)
	return len(p), nil
}

func (t *tail) add(line string) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" {
		return
	}
	if t.panic == nil && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
		t.inPanic = true
	}
	if t.inPanic {
		t.panic = append(t.panic, line)
		t.inPanic = len(t.panic) < panicLines
	}
	t.lines = append(t.lines, renderLine(line))
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// Lines returns the kept lines, oldest first, including an unfinished one.
func (t *tail) Lines() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, renderLine(string(t.partial)))
	}
	if len(out) > t.max {
		out = out[len(out)-t.max:]
	}
	if len(t.panic) > 0 && len(out) > 0 && out[0] != t.panic[0] && !slices.Contains(out, t.panic[0]) {
		out = append(append(slices.Clone(t.panic), "..."), out...)
	}
	return out
}

// renderLine shows an hclog JSON line as text; other lines stay as they are.
func renderLine(line string) string {
	if !strings.HasPrefix(line, "{") {
		return line
	}
	var m map[string]any
	if json.Unmarshal([]byte(line), &m) != nil {
		return line
	}
	msg, ok := m["@message"].(string)
	if !ok {
		return line
	}
	level, _ := m["@level"].(string)
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", strings.ToUpper(level), msg)
	keys := make([]string, 0, len(m))
	for k := range m {
		if !strings.HasPrefix(k, "@") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		if s, ok := v.(string); ok && strings.Contains(s, "\n") {
			// A stack trace: keep it readable.
			fmt.Fprintf(&b, " %s=\n    %s", k, strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    "))
			continue
		}
		fmt.Fprintf(&b, " %s=%v", k, v)
	}
	return b.String()
}

// lineWriter logs what a plugin writes to os.Stdout/os.Stderr after it
// started serving (go-plugin forwards those over its stdio stream), one log
// entry per line, and keeps stderr lines in the tail.
type lineWriter struct {
	tail *tail
	log  hclog.Logger

	mu      sync.Mutex
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.tail != nil {
		_, _ = w.tail.Write(p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	data := append(w.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimRight(string(data[:i]), "\r"); line != "" {
			w.log.Info(line)
		}
		data = data[i+1:]
	}
	w.partial = append([]byte(nil), data...)
	return len(p), nil
}
