package sdktest

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// MaintenanceCase describes a maintenance plugin for [MaintenanceKit].
type MaintenanceCase struct {
	// Component is the maintenance component's name in the target.
	Component string
	// Config is a valid connector config for it.
	Config map[string]string
	// FreshConfig, when set, is called instead of using Config at the start
	// of every check; it is where a case creates tables with data for the
	// plugin to look after.
	FreshConfig func(t testing.TB) map[string]string
	// Force names tasks the cycles force (default none: triggers decide).
	Force []string
	// InvalidConfig maps keys to values Open must refuse, naming the key,
	// and so must Validate for keys the component declares; when empty
	// the kit derives some from the spec.
	InvalidConfig map[string]string
	// NotSecret lists keys whose names look like secrets but are not.
	NotSecret []string
	// Skip names checks that do not apply.
	Skip []string
	// Timeout bounds each check (default 5 min).
	Timeout time.Duration
}

// The maintenance kit's checks, besides spec, invalid_config and close.
const (
	CheckCycle            = "cycle"
	CheckDryRun           = "dry_run"
	CheckConcurrentStatus = "status_during_cycle"
)

// maintenanceCallTimeout bounds one Cycle.
const maintenanceCallTimeout = 2 * time.Minute

// MaintenanceKit runs the maintenance conformance checks against target,
// each as a named subtest with a fresh plugin process:
//
//   - spec, invalid_config: as in [SourceKit].
//   - cycle: Open, Status, Cycle, Status, Close; runs name their table and
//     task, numbers are not negative, Next is not negative.
//   - dry_run: a dry-run Cycle (with Force) changes nothing Status shows:
//     snapshots, files, bytes, records, manifests, last commit.
//   - status_during_cycle: Status answers while a Cycle runs.
//   - close: Close succeeds and calls after it fail.
func MaintenanceKit(t *testing.T, target Target, c MaintenanceCase) {
	t.Helper()
	maintenanceKit(tAdapter{t}, target, c)
}

type maintenanceKitRun struct {
	c MaintenanceCase
}

func maintenanceKit(t tb, target Target, c MaintenanceCase) {
	if c.Component == "" {
		t.Fatal("sdktest.MaintenanceKit: the case names no Component")
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	k := &maintenanceKitRun{c: c}
	checks := []struct {
		name string
		fn   func(t tb, s *session, cfg map[string]string)
	}{
		{CheckSpec, k.spec},
		{CheckInvalidConfig, k.invalidConfig},
		{CheckCycle, k.cycle},
		{CheckDryRun, k.dryRun},
		{CheckConcurrentStatus, k.statusDuringCycle},
		{CheckClose, k.close},
	}
	for _, ch := range checks {
		t.run(ch.name, func(t tb) {
			skipIf(t, c.Skip, ch.name)
			s := newSession(t, target, c.Timeout)
			cfg := maps.Clone(c.Config)
			if c.FreshConfig != nil {
				cfg = c.FreshConfig(t)
			}
			ch.fn(t, s, cfg)
		})
	}
}

func (k *maintenanceKitRun) open(t tb, s *session, cfg map[string]string) *client.MaintenanceTask {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	task, err := s.p.OpenMaintenance(ctx, client.MaintenanceOpen{Component: k.c.Component, Connector: "sdktest", Config: cfg})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return task
}

func (k *maintenanceKitRun) closeTask(t tb, s *session, task *client.MaintenanceTask) {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func (k *maintenanceKitRun) spec(t tb, s *session, cfg map[string]string) {
	checkSpec(t, s, sdk.KindMaintenance, k.c.Component, cfg, k.c.NotSecret)
}

func (k *maintenanceKitRun) invalidConfig(t tb, s *session, cfg map[string]string) {
	comp := s.describe(sdk.KindMaintenance, k.c.Component)
	checkInvalidConfig(t, s, comp, invalidConfigs(comp, cfg, k.c.InvalidConfig), func(bad map[string]string) (func(), error) {
		ctx, cancel := s.callCtx(callTimeout)
		defer cancel()
		task, err := s.p.OpenMaintenance(ctx, client.MaintenanceOpen{Component: k.c.Component, Connector: "sdktest", Config: bad})
		if err != nil {
			return nil, err
		}
		return func() { _ = task.Close(ctx) }, nil
	})
}

func (k *maintenanceKitRun) status(t tb, s *session, task *client.MaintenanceTask) sdk.MaintenanceStatus {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	st, err := task.Status(ctx)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	for _, h := range st.Tables {
		if h.Table == "" {
			t.Errorf("Status reported a table with no name")
		}
		for name, v := range map[string]int64{"Snapshots": h.Snapshots, "DataFiles": h.DataFiles, "SmallFiles": h.SmallFiles,
			"DeleteFiles": h.DeleteFiles, "DataBytes": h.DataBytes, "Records": h.Records, "Manifests": h.Manifests, "MetadataBytes": h.MetadataBytes} {
			if v < 0 {
				t.Errorf("Status: table %s has %s=%d", h.Table, name, v)
			}
		}
	}
	checkRuns(t, "Status", st.Runs)
	return st
}

func checkRuns(t tb, what string, runs []sdk.TaskRun) {
	t.Helper()
	for _, r := range runs {
		if r.Table == "" || r.Task == "" {
			t.Errorf("%s reported a run without its table or task: %+v", what, r)
		}
		if r.Duration < 0 || r.FilesBefore < 0 || r.FilesAfter < 0 || r.BytesBefore < 0 || r.BytesAfter < 0 {
			t.Errorf("%s reported a run with negative numbers: %+v", what, r)
		}
	}
}

func (k *maintenanceKitRun) runCycle(t tb, s *session, task *client.MaintenanceTask, dry bool) sdk.CycleResult {
	t.Helper()
	ctx, cancel := s.callCtx(maintenanceCallTimeout)
	defer cancel()
	res, err := task.Cycle(ctx, sdk.CycleRequest{Force: k.c.Force, DryRun: dry})
	if err != nil {
		t.Fatalf("Cycle(dry run %v): %v", dry, err)
	}
	if res.Next < 0 {
		t.Errorf("Cycle returned Next=%v; want when the next cycle is due, from now", res.Next)
	}
	checkRuns(t, "Cycle", res.Runs)
	return res
}

func (k *maintenanceKitRun) cycle(t tb, s *session, cfg map[string]string) {
	task := k.open(t, s, cfg)
	defer k.closeTask(t, s, task)
	k.status(t, s, task)
	k.runCycle(t, s, task, false)
	k.status(t, s, task)
}

func (k *maintenanceKitRun) dryRun(t tb, s *session, cfg map[string]string) {
	task := k.open(t, s, cfg)
	defer k.closeTask(t, s, task)
	before := k.status(t, s, task)
	k.runCycle(t, s, task, true)
	after := k.status(t, s, task)
	b, a := healthByTable(before), healthByTable(after)
	for name, hb := range b {
		ha, ok := a[name]
		if !ok {
			t.Errorf("table %s disappeared from Status after a dry run", name)
			continue
		}
		if d := healthDiff(hb, ha); d != "" {
			t.Errorf("a dry run changed table %s: %s", name, d)
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			t.Errorf("table %s appeared in Status after a dry run", name)
		}
	}
}

func healthByTable(st sdk.MaintenanceStatus) map[string]sdk.TableHealth {
	out := map[string]sdk.TableHealth{}
	for _, h := range st.Tables {
		out[h.Table] = h
	}
	return out
}

func healthDiff(b, a sdk.TableHealth) string {
	var d []string
	cmp := func(name string, x, y int64) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %d → %d", name, x, y))
		}
	}
	cmp("snapshots", b.Snapshots, a.Snapshots)
	cmp("data files", b.DataFiles, a.DataFiles)
	cmp("delete files", b.DeleteFiles, a.DeleteFiles)
	cmp("data bytes", b.DataBytes, a.DataBytes)
	cmp("records", b.Records, a.Records)
	cmp("manifests", b.Manifests, a.Manifests)
	if !b.LastCommit.Equal(a.LastCommit) {
		d = append(d, fmt.Sprintf("last commit %s → %s", b.LastCommit, a.LastCommit))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

func (k *maintenanceKitRun) statusDuringCycle(t tb, s *session, cfg map[string]string) {
	task := k.open(t, s, cfg)
	defer k.closeTask(t, s, task)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := s.callCtx(maintenanceCallTimeout)
		defer cancel()
		_, err := task.Cycle(ctx, sdk.CycleRequest{Force: k.c.Force})
		done <- err
	}()
	// Ask for the status a few times while the cycle runs (a quick cycle
	// may end before the first ask; that proves nothing either way).
	var cycleErr error
	finished := false
	for i := 0; i < 10 && !finished; i++ {
		select {
		case cycleErr = <-done:
			finished = true
			continue
		case <-time.After(50 * time.Millisecond):
		}
		ctx, cancel := s.callCtx(callTimeout)
		_, err := task.Status(ctx)
		cancel()
		if err != nil {
			t.Errorf("Status while a Cycle runs: %v", err)
			break
		}
	}
	if !finished {
		cycleErr = <-done
	}
	if cycleErr != nil {
		t.Errorf("Cycle: %v", cycleErr)
	}
}

func (k *maintenanceKitRun) close(t tb, s *session, cfg map[string]string) {
	task := k.open(t, s, cfg)
	k.closeTask(t, s, task)
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	if _, err := task.Status(ctx); err == nil {
		t.Errorf("Status after Close succeeded; the task's handle must be gone")
	}
}
