package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestZombieHostFenced freezes a running floe (SIGSTOP of the host and
// its plugins: a paused VM, a long GC pause), starts a second floe with
// the same connector while the first one is frozen, lets it take the
// partitions over and commit, then thaws the first one, which resumes in
// the middle of its checkpoints as if nothing had happened: a zombie. The
// table's fencing must refuse whatever the zombie commits, so that the
// table still holds every produced record exactly once once the second
// floe caught up. (The zombie's log must show a fenced commit, or the
// test proved nothing.)
func TestZombieHostFenced(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 6, initial: 10_000, rate: 1000, name: "zombie"})
	zombie := r.f
	r.waitCommitted(ctx, r.committed(ctx)+3000)

	// Freeze: the plugins first, so that the host sees no plugin die.
	frozen := r.committed(ctx)
	procs := append(zombie.Plugins(), harness.Proc{PID: zombie.PID(), Name: "floe"})
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGSTOP)
	}
	t.Logf("froze floe (pid %d) and its plugins %v at %d committed", zombie.PID(), procs, frozen)

	// The heir: same connector, same tables, same consumer group.
	heir := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{r.conn}})
	r.f = heir
	heir.WaitStatus(ctx, r.opts.name, "the heir's connector RUNNING", false, harness.ConnectorStatus.Running)
	r.waitCommitted(ctx, frozen+5000) // it got the partitions (the zombie's sessions timed out) and commits

	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGCONT)
	}
	t.Logf("thawed the zombie floe (pid %d)", zombie.PID())
	// Let the zombie do what it does: commit its old checkpoints, rejoin
	// the group, take partitions back, fail.
	time.Sleep(20 * time.Second)
	if st, err := zombie.API.Status(ctx, r.opts.name); err == nil {
		t.Logf("the zombie after 20 s: %s", st.Summary())
	}
	if !strings.Contains(zombie.Log(), "fenced") {
		t.Errorf("the zombie's log shows no fenced commit: it did not try to commit after its thaw, so the test did not exercise fencing")
	}
	zombie.Kill()

	res := r.check(ctx, harness.DuckDB, true)
	t.Logf("after the zombie: %d rows (%d in the rare table); lost %d, duplicated %d", res.rows, res.rareRows, res.lost, res.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	heir.Stop()
}
