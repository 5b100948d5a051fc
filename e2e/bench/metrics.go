package bench

import (
	"context"
	"sync"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// MetricSample is one reading of a connector's series on floe's /metrics.
type MetricSample struct {
	At        time.Time
	RecordsIn float64 // floe_records_in_total, summed over tasks
	// RecordsOut is floe_records_out_total: records made visible by commits.
	RecordsOut float64
	Commits    float64 // floe_commits_total
	// CommitSum and CommitCount are floe_commit_duration_seconds' _sum and
	// _count.
	CommitSum, CommitCount float64
	Files                  float64 // floe_files_written_total
	// CommitLag is floe_commit_lag_seconds: at the last commit, now minus
	// the receive time of the oldest batch it covered.
	CommitLag float64
}

// MetricWatch polls GET /metrics every interval and keeps every sample.
type MetricWatch struct {
	api       *harness.Client
	connector string
	stop      chan struct{}
	done      chan struct{}

	mu      sync.Mutex
	samples []MetricSample
	errs    int
}

// WatchMetrics starts polling api's /metrics for connector's series.
func WatchMetrics(api *harness.Client, connector string, interval time.Duration) *MetricWatch {
	w := &MetricWatch{api: api, connector: connector, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			w.poll()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *MetricWatch) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := w.api.Metrics(ctx)
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs++
		return
	}
	l := `connector="` + w.connector + `"`
	var s MetricSample
	s.At = at
	s.RecordsIn, _ = m.Sum("floe_records_in_total", l)
	s.RecordsOut, _ = m.Sum("floe_records_out_total", l)
	s.Commits, _ = m.Sum("floe_commits_total", l)
	s.CommitSum, _ = m.Sum("floe_commit_duration_seconds_sum", l)
	s.CommitCount, _ = m.Sum("floe_commit_duration_seconds_count", l)
	s.Files, _ = m.Sum("floe_files_written_total", l)
	s.CommitLag, _ = m.Sum("floe_commit_lag_seconds", l)
	w.samples = append(w.samples, s)
}

// Stop ends polling (after one last poll).
func (w *MetricWatch) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// Samples returns the samples so far.
func (w *MetricWatch) Samples() []MetricSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]MetricSample(nil), w.samples...)
}

// Last returns the newest sample (zero before the first).
func (w *MetricWatch) Last() MetricSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.samples) == 0 {
		return MetricSample{}
	}
	return w.samples[len(w.samples)-1]
}

// FirstWhere returns the first sample satisfying ok.
func FirstWhere(samples []MetricSample, ok func(MetricSample) bool) (MetricSample, bool) {
	for _, s := range samples {
		if ok(s) {
			return s, true
		}
	}
	return MetricSample{}, false
}

// CommitLags returns floe_commit_lag_seconds as seen right after each
// commit (the first sample whose commit count grew), in commit order.
func CommitLags(samples []MetricSample) []float64 {
	var out []float64
	for i := 1; i < len(samples); i++ {
		if samples[i].Commits > samples[i-1].Commits {
			out = append(out, samples[i].CommitLag)
		}
	}
	return out
}

// CommitDurations derives each commit's duration from consecutive
// samples of the commit-duration histogram: where one commit happened
// between two samples its duration is the growth of _sum; where several
// did, each gets their mean (the caller polls often enough to make that
// rare, and says how often it happened).
func CommitDurations(samples []MetricSample) (durs []float64, merged int) {
	for i := 1; i < len(samples); i++ {
		dc := samples[i].CommitCount - samples[i-1].CommitCount
		if dc <= 0 {
			continue
		}
		ds := samples[i].CommitSum - samples[i-1].CommitSum
		n := int(dc + 0.5)
		if n > 1 {
			merged += n
		}
		for range n {
			durs = append(durs, ds/float64(n))
		}
	}
	return durs, merged
}
