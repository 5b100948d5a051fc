package kafka

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
	"github.com/floehq/floe/sdk"
)

// envStarvedChild runs TestStarvedTaskChild as the child of
// TestStarvedTaskJoinsAgain, with the tasks' config in it (JSON).
const envStarvedChild = "FLOE_KAFKA_STARVED_CHILD"

// A process whose two tasks are killed inside a cooperative rebalance
// (task 1 had all six partitions and was giving three up for task 0,
// which had joined) leaves the group's stored assignment at three
// partitions for task 1 and none for task 0. The next process's tasks
// rejoin under the same static ids and are handed that assignment
// without a rebalance (KIP-345): three partitions would stay unread for
// good. Task 0 notices it holds nothing while the topic has a partition
// per task, and joins again; every partition is read within a minute.
func TestStarvedTaskJoinsAgain(t *testing.T) {
	env := kafkatest.Services(t)
	topic := kafkatest.UniqueName("starved")
	createTopic(t, env, topic, 6)
	cfg := baseConfig(env, topic)
	cfg["kafka.session.timeout.ms"] = "6000" // starvedAfter: 18 s

	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestStarvedTaskChild$", "-test.v")
	child.Env = append(os.Environ(), envStarvedChild+"="+string(js))
	out, err := child.CombinedOutput()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was to kill itself inside the rebalance; it ended with %v:\n%s", err, out)
	}

	l := newLedger(t)
	h1, h0 := newFakeHost(l, "t1"), newFakeHost(l, "t0")
	t1 := openTask(t, "starved", 1, 2, h1, cfg)
	defer closeTask(t, t1)
	r1 := startRunner(t, t1, h1)
	t0 := openTask(t, "starved", 0, 2, h0, cfg)
	defer closeTask(t, t0)
	r0 := startRunner(t, t0, h0)
	start := time.Now()
	if !l.waitFor(time.Minute, func() bool {
		return len(t0.buf.assigned()) > 0 && len(t0.buf.assigned())+len(t1.buf.assigned()) == 6
	}) {
		t.Fatalf("after a minute task 0 holds %d partitions and task 1 %d, of 6", len(t0.buf.assigned()), len(t1.buf.assigned()))
	}
	t.Logf("all six partitions read %s after the tasks joined again", time.Since(start).Round(time.Millisecond))
	for _, r := range []*runner{r0, r1} {
		if err := r.halt(); err != nil {
			t.Fatalf("task %s: %v", r.host.name, err)
		}
	}
}

// killingHost kills its process when partitions are revoked: inside the
// first half of a cooperative rebalance, before the revoking member
// rejoins for the second.
type killingHost struct{ *fakeHost }

func (killingHost) PartitionsRevoked(context.Context, map[string]int64) error {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestStarvedTaskChild is TestStarvedTaskJoinsAgain's child: task 1
// takes all six partitions, task 0 joins, and the process dies as task 1
// starts giving three of them up.
func TestStarvedTaskChild(t *testing.T) {
	js := os.Getenv(envStarvedChild)
	if js == "" {
		t.Skip("run by TestStarvedTaskJoinsAgain")
	}
	var cfg map[string]string
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	l := newLedger(t)
	h1 := killingHost{newFakeHost(l, "t1")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := source{}.Open(ctx, sdk.SourceOpenRequest{Connector: "starved", Task: 1, Tasks: 2, Config: sdk.NewConfig(cfg), Host: h1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t1 := st.(*task)
	if !l.waitFor(30*time.Second, func() bool { return len(t1.buf.assigned()) == 6 }) {
		t.Fatalf("task 1 holds %d partitions, want 6", len(t1.buf.assigned()))
	}
	openTask(t, "starved", 0, 2, newFakeHost(l, "t0"), cfg)
	<-ctx.Done()
	t.Fatal("task 1 gave nothing up within a minute of task 0's join")
}
