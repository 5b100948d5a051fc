package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/runtime"
)

// metricValue sums the samples of a counter whose labels contain label.
func metricValue(t *testing.T, w *Worker, name, label string) float64 {
	t.Helper()
	fams, err := w.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"=\""+l.GetValue()+"\"")
			}
			if strings.Contains(strings.Join(labels, ","), label) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// healConfig is baseConfig with a fast restart policy.
func healConfig() map[string]string {
	cfg := baseConfig()
	cfg["gen.count"] = "0"
	cfg["restart.backoff.initial.ms"] = "20"
	cfg["errors.retry.delay.max.ms"] = "100"
	return cfg
}

func statusOf(t *testing.T, w *Worker, name string) ConnectorStatus {
	t.Helper()
	st, err := w.ConnectorStatus(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitHealPasses returns once the restart policy made n more passes.
func waitHealPasses(w *Worker, n int64) {
	for seen := w.healPasses.Load(); w.healPasses.Load() < seen+n; {
		time.Sleep(healTick / 4)
	}
}

// TestFailedTaskRestartsByItself: a task that fails with a transient
// error is restarted by the policy, its trace says when, and once the
// cause is gone it runs again with no human and the restarts counted.
func TestFailedTaskRestartsByItself(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	fp.failTask.Store(1)
	if _, err := w.CreateConnector(context.Background(), "c", healConfig(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a restart of the failing task", func() bool {
		st := statusOf(t, w, "c")
		return st.Floe != nil && st.Floe.Restarts >= 2
	})
	st := statusOf(t, w, "c")
	if len(st.Floe.Healing) != 1 || st.Floe.Healing[0].Instance != "task 1" || st.Floe.Healing[0].NextAttempt.IsZero() {
		t.Fatalf("healing while the task fails: %+v", st.Floe.Healing)
	}
	waitFor(t, "task 1 FAILED with the policy's note", func() bool {
		st := statusOf(t, w, "c")
		return len(st.Tasks) == 2 && st.Tasks[1].State == StateFailed &&
			strings.Contains(st.Tasks[1].Trace, "the source broke") && strings.Contains(st.Tasks[1].Trace, "floe restarts it automatically")
	})
	fp.failTask.Store(-1)
	// The record stays until the task has been up for healthyAfter.
	waitFor(t, "running again", func() bool {
		st := statusOf(t, w, "c")
		return states(st) == "RUNNING RUNNING RUNNING" && len(st.Floe.Healing) == 1 && st.Floe.Healing[0].Attempts >= 2
	})
	if got := metricValue(t, w, "floe_restarts_total", `instance="task"`); got < 2 {
		t.Errorf("floe_restarts_total{instance=task} = %v, want ≥ 2", got)
	}
}

// TestFailedConnectorRestartsWhole: a connector whose commits failed past
// the budget restarts whole and commits again once the sink is back.
func TestFailedConnectorRestartsWhole(t *testing.T) {
	fp := newFakePlugins()
	w, err := New(context.Background(), Config{DataDir: t.TempDir(), WorkerID: "w1"}, Deps{
		Plugins: fp,
		Tuning: runtime.Tuning{ReadPoll: 10 * time.Millisecond, CloseTimeout: time.Second,
			CommitMaxAttempts: 2, CommitBackoff: 5 * time.Millisecond, CommitMaxBackoff: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	fp.failCommit.Store(true)
	if _, err := w.CreateConnector(context.Background(), "c", healConfig(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a whole restart", func() bool {
		st := statusOf(t, w, "c")
		return st.Floe != nil && st.Floe.Restarts >= 1
	})
	fp.failCommit.Store(false)
	waitFor(t, "commits after the restarts", func() bool {
		st := statusOf(t, w, "c")
		return states(st) == "RUNNING RUNNING RUNNING" && st.Floe.Commits > 0 && len(st.Floe.Healing) == 0
	})
	if got := metricValue(t, w, "floe_restarts_total", `instance="connector"`); got < 1 {
		t.Errorf("floe_restarts_total{instance=connector} = %v, want ≥ 1", got)
	}
}

// TestPermanentFailureWaitsForAHuman: a failure marked permanent is not
// restarted; the trace says so and what to do.
func TestPermanentFailureWaitsForAHuman(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	fp.failTask.Store(0)
	fp.failPermanent.Store(true)
	if _, err := w.CreateConnector(context.Background(), "c", healConfig(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the policy's decision", func() bool {
		st := statusOf(t, w, "c")
		return st.Floe != nil && len(st.Floe.Healing) == 1 && st.Floe.Healing[0].Permanent
	})
	// Three more passes, each later than the 20 ms first delay: a
	// restart would have come.
	waitHealPasses(w, 3)
	st := statusOf(t, w, "c")
	if st.Floe.Restarts != 0 || !st.Floe.Healing[0].NextAttempt.IsZero() {
		t.Fatalf("a permanent failure was restarted or scheduled: %+v", st.Floe)
	}
	if tr := st.Tasks[0].Trace; !strings.Contains(tr, "floe does not restart it") || !strings.Contains(tr, "/connectors/c/restart") {
		t.Fatalf("trace does not say a human must act: %s", tr)
	}
}

// TestRestartsGiveUpAfterTheRetryTimeout: past errors.retry.timeout the
// task stays FAILED and says so; 0 turns restarts off, as in Connect.
func TestRestartsGiveUpAfterTheRetryTimeout(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	fp.failTask.Store(0)
	cfg := healConfig()
	cfg["errors.retry.timeout"] = "300"
	if _, err := w.CreateConnector(context.Background(), "c", cfg, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the policy giving up", func() bool {
		st := statusOf(t, w, "c")
		return st.Floe != nil && len(st.Floe.Healing) == 1 && st.Floe.Healing[0].GaveUp
	})
	st := statusOf(t, w, "c")
	if st.Floe.Restarts < 1 || !strings.Contains(st.Tasks[0].Trace, "floe gave up restarting it") {
		t.Fatalf("gave up after %d restarts; trace %s", st.Floe.Restarts, st.Tasks[0].Trace)
	}

	cfg["errors.retry.timeout"] = "0"
	if _, err := w.CreateConnector(context.Background(), "off", cfg, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "task 0 of off FAILED", func() bool {
		return statusOf(t, w, "off").Tasks[0].State == StateFailed
	})
	// The policy looks at every connector each pass: three passes saw
	// the failure and must have left it be.
	waitHealPasses(w, 3)
	if st := statusOf(t, w, "off"); st.Floe.Restarts != 0 || len(st.Floe.Healing) != 0 {
		t.Fatalf("errors.retry.timeout=0 restarted: %+v", st.Floe)
	}
}
