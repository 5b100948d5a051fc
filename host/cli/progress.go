package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/host/worker"
)

// Progress refresh intervals: a terminal line is redrawn twice a second;
// a log (file, pipe, CI) gets a plain line every 5 s.
const (
	progressTTYInterval   = 500 * time.Millisecond
	progressPlainInterval = 5 * time.Second
	// rateWindow is how far back the records/s figure looks.
	rateWindow = 3 * time.Second
)

// totals sums the progress of every connector.
type totals struct {
	connectors int
	records    int64
	commits    int64
	files      int64
	checkpoint uint64
	deadLetter int64
}

// sumProgress reads every connector's status. Connectors deleted in
// between are skipped.
func sumProgress(ctx context.Context, api worker.API) totals {
	var t totals
	for _, name := range api.Connectors(ctx) {
		st, err := api.ConnectorStatus(ctx, name)
		if err != nil {
			continue
		}
		t.connectors++
		if p := st.Floe; p != nil {
			t.records += p.RecordsIn
			t.commits += p.Commits
			t.files += p.FilesWritten
			t.deadLetter += p.DeadLetters
			t.checkpoint = max(t.checkpoint, p.Checkpoint)
		}
	}
	return t
}

// sample is one reading, for the rate.
type sample struct {
	at      time.Time
	records int64
}

// progressLine renders the live status line.
type progressLine struct {
	start   time.Time
	samples []sample
}

// render returns the line for t read at now: records/s over the last
// few seconds or, for the final line, over the whole run.
func (p *progressLine) render(t totals, now time.Time, final bool) string {
	p.samples = append(p.samples, sample{now, t.records})
	for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= rateWindow {
		p.samples = p.samples[1:]
	}
	first, unit := p.samples[0], "rec/s"
	if final {
		first, unit = sample{p.start, 0}, "rec/s average"
	}
	rate := 0.0
	if d := now.Sub(first.at); d > 0 {
		rate = float64(t.records-first.records) / d.Seconds()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s  %s records  %s commits  %s files  checkpoint %d",
		group(int64(rate+0.5)), unit, group(t.records), group(t.commits), group(t.files), t.checkpoint)
	if t.deadLetter > 0 {
		fmt.Fprintf(&b, "  %s dead letters", group(t.deadLetter))
	}
	fmt.Fprintf(&b, "  %s elapsed", clock(now.Sub(p.start)))
	return b.String()
}

// showProgress prints the status line until ctx ends, then prints it one
// last time. On a terminal (live != nil) the line is redrawn in place;
// otherwise a plain line goes to w every 5 s.
func showProgress(ctx context.Context, w io.Writer, live *liveLine, api worker.API, start time.Time) {
	// The last line is drawn once ctx has ended: the status reads keep
	// ctx's values, not its end.
	rctx := context.WithoutCancel(ctx)
	p := &progressLine{start: start}
	p.samples = []sample{{time.Now(), sumProgress(rctx, api).records}}
	interval := progressPlainInterval
	if live != nil {
		interval = progressTTYInterval
	}
	draw := func(final bool) {
		line := p.render(sumProgress(rctx, api), time.Now(), final)
		switch {
		case live == nil:
			// A progress line that cannot be written is lost; ingestion goes on.
			_, _ = fmt.Fprintln(w, line)
		case final:
			live.end(line)
		default:
			live.draw(line)
		}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			draw(true)
			return
		case <-tick.C:
			draw(false)
		}
	}
}

// liveLine is a status line redrawn in place on a terminal that the log
// shares: a log record first clears the line, then the line is drawn
// again below it, so the two never garble each other.
type liveLine struct {
	mu   sync.Mutex
	out  io.Writer
	line string // what is on screen; "" when nothing is
}

// draw replaces the line on screen.
func (l *liveLine) draw(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line = line
	_, _ = fmt.Fprintf(l.out, "\r%s\x1b[K", line) // a lost redraw is redrawn on the next tick
}

// end draws the line a last time and leaves it on screen.
func (l *liveLine) end(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line = ""
	_, _ = fmt.Fprintf(l.out, "\r%s\x1b[K\n", line) // the last line is for show; the exit code has the outcome
}

// logWriter wraps the log's writer so that each record clears the line
// first and redraws it after.
func (l *liveLine) logWriter(w io.Writer) io.Writer { return &liveLogWriter{l: l, w: w} }

type liveLogWriter struct {
	l *liveLine
	w io.Writer
}

func (x *liveLogWriter) Write(p []byte) (int, error) {
	x.l.mu.Lock()
	defer x.l.mu.Unlock()
	// Clearing and redrawing the line are for show: the log record's own
	// write is the one whose error counts.
	if x.l.line != "" {
		_, _ = fmt.Fprint(x.l.out, "\r\x1b[K")
	}
	n, err := x.w.Write(p)
	if x.l.line != "" {
		_, _ = fmt.Fprintf(x.l.out, "\r%s\x1b[K", x.l.line)
	}
	return n, err
}

// errNoConnectors: --exit-when-done has nothing to wait for.
var errNoConnectors = errors.New("no connectors to wait for: give connector files after the worker config, or put them in the worker's config.dir")

// doneCheck says whether every connector's sources reached the end of
// their input and committed it; a STOPPED connector counts as done (it
// will not move until someone resumes it). A FAILED connector or task is
// an error carrying its trace.
func doneCheck(ctx context.Context, api worker.API) (bool, error) {
	names := api.Connectors(ctx)
	if len(names) == 0 {
		return false, errNoConnectors
	}
	done := true
	for _, name := range names {
		st, err := api.ConnectorStatus(ctx, name)
		if errors.Is(err, worker.ErrNotFound) {
			continue
		} else if err != nil {
			return false, fmt.Errorf("status of connector %s: %w", name, err)
		}
		if st.Connector.State == worker.StateFailed {
			return false, fmt.Errorf("connector %s FAILED%s", name, trace(st.Connector.Trace))
		}
		for _, t := range st.Tasks {
			if t.State == worker.StateFailed {
				return false, fmt.Errorf("connector %s task %d FAILED%s", name, t.ID, trace(t.Trace))
			}
		}
		if st.Connector.State == worker.StateStopped {
			continue
		}
		if st.Floe == nil || !st.Floe.EndOfInput {
			done = false
		}
	}
	return done, nil
}

func trace(t string) string {
	if t = strings.TrimSpace(t); t == "" {
		return " (no trace; see the log above)"
	}
	return ":\n" + t
}

// group formats n with thousands separators: 1234567 → 1,234,567.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// clock formats a duration as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
