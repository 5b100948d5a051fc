package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/floehq/floe/host/store"
)

func tasks(conn string, ids ...int) []TaskID {
	out := make([]TaskID, 0, len(ids))
	for _, i := range ids {
		out = append(out, TaskID{Connector: conn, Task: i})
	}
	return out
}

func workers(applied int64, ids ...string) []Worker {
	out := make([]Worker, 0, len(ids))
	for _, id := range ids {
		out = append(out, Worker{ID: id, Plugins: []string{"kafka", "iceberg"}, Applied: applied})
	}
	return out
}

func conn(name string, n int) Connector {
	return Connector{Name: name, Tasks: n, Plugins: []string{"kafka", "iceberg"}, Target: store.TargetRunning}
}

func mustAssign(t *testing.T, prev Assignment, ws []Worker, cs []Connector) Result {
	t.Helper()
	r, err := Assign(prev, ws, cs)
	if err != nil {
		t.Fatal(err)
	}
	checkShape(t, r.Assignment, cs)
	return r
}

// checkShape checks what holds for every assignment: no task twice, one
// committer per placed connector, tasks only of placed connectors.
func checkShape(t *testing.T, a Assignment, cs []Connector) {
	t.Helper()
	seen := map[TaskID]string{}
	for id, ts := range a.Tasks {
		for _, task := range ts {
			if other, dup := seen[task]; dup {
				t.Errorf("epoch %d: task %s on %s and %s", a.Epoch, task, other, id)
			}
			seen[task] = id
		}
	}
	for _, r := range a.Revoking {
		if w, dup := seen[r.Task]; dup {
			t.Errorf("epoch %d: task %s withheld and on %s", a.Epoch, r.Task, w)
		}
	}
	for _, c := range cs {
		_, hasCommitter := a.Committers[c.Name]
		placed := false
		for task := range seen {
			placed = placed || task.Connector == c.Name
		}
		if placed && !hasCommitter {
			t.Errorf("epoch %d: connector %s has tasks but no committer", a.Epoch, c.Name)
		}
	}
}

func TestAssignCases(t *testing.T) {
	two := Assignment{Epoch: 4,
		Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1, 2), "w2": tasks("orders", 3, 4, 5)},
		Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 2}}}
	three := Assignment{Epoch: 7,
		Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 3), "w2": tasks("orders", 1, 4), "w3": tasks("orders", 2, 5)},
		Committers: map[string]Committer{"orders": {Worker: "w3", Epoch: 5}}}
	for _, tc := range []struct {
		name     string
		prev     Assignment
		workers  []Worker
		conns    []Connector
		want     Assignment
		unplaced []Unplaced
	}{
		{
			name:    "first placement spreads tasks and puts the committer on the first worker",
			workers: workers(0, "w3", "w1", "w2"), conns: []Connector{conn("orders", 6)},
			want: Assignment{Epoch: 1,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 3), "w2": tasks("orders", 1, 4), "w3": tasks("orders", 2, 5)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 1}}},
		},
		{
			name: "a join revokes only the two tasks that must move, and withholds them",
			prev: two, workers: workers(4, "w1", "w2", "w3"), conns: []Connector{conn("orders", 6)},
			want: Assignment{Epoch: 5,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1), "w2": tasks("orders", 3, 4)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 2}},
				Revoking: []Revocation{
					{Task: TaskID{"orders", 2}, From: "w1", To: "w3", Epoch: 5},
					{Task: TaskID{"orders", 5}, From: "w2", To: "w3", Epoch: 5},
				}},
		},
		{
			name: "a revoked task goes to its new worker once the old one applied the revoking epoch",
			prev: Assignment{Epoch: 5,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1), "w2": tasks("orders", 3, 4)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 2}},
				Revoking: []Revocation{
					{Task: TaskID{"orders", 2}, From: "w1", To: "w3", Epoch: 5},
					{Task: TaskID{"orders", 5}, From: "w2", To: "w3", Epoch: 5},
				}},
			workers: []Worker{{ID: "w1", Plugins: []string{"kafka", "iceberg"}, Applied: 5}, {ID: "w2", Plugins: []string{"kafka", "iceberg"}, Applied: 4}, {ID: "w3", Plugins: []string{"kafka", "iceberg"}, Applied: 5}},
			conns:   []Connector{conn("orders", 6)},
			want: Assignment{Epoch: 6,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1), "w2": tasks("orders", 3, 4), "w3": tasks("orders", 2)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 2}},
				Revoking:   []Revocation{{Task: TaskID{"orders", 5}, From: "w2", To: "w3", Epoch: 5}}},
		},
		{
			name: "a revoked task moves at once when its old worker dies; withheld tasks count as load",
			prev: Assignment{Epoch: 5,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1), "w2": tasks("orders", 3, 4)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 2}},
				Revoking:   []Revocation{{Task: TaskID{"orders", 2}, From: "w1", To: "w3", Epoch: 5}, {Task: TaskID{"orders", 5}, From: "w2", To: "w3", Epoch: 5}}},
			workers: []Worker{{ID: "w1", Plugins: []string{"kafka", "iceberg"}, Applied: 4}, {ID: "w3", Plugins: []string{"kafka", "iceberg"}, Applied: 5}},
			conns:   []Connector{conn("orders", 6)},
			want: Assignment{Epoch: 6,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1, 3), "w3": tasks("orders", 4, 5)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 2}},
				Revoking:   []Revocation{{Task: TaskID{"orders", 2}, From: "w1", To: "w3", Epoch: 5}}},
		},
		{
			name: "a dead worker's tasks and committer move at once, one to each survivor",
			prev: three, workers: workers(7, "w1", "w2"), conns: []Connector{conn("orders", 6)},
			want: Assignment{Epoch: 8,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 2, 3), "w2": tasks("orders", 1, 4, 5)},
				Committers: map[string]Committer{"orders": {Worker: "w1", Epoch: 8}}},
		},
		{
			name: "a worker without the sink plugin gets none of the connector's tasks; load is balanced over connectors",
			workers: []Worker{
				{ID: "w1", Plugins: []string{"kafka", "iceberg"}},
				{ID: "w2", Plugins: []string{"kafka"}},
				{ID: "w3", Plugins: []string{"kafka", "iceberg", "datagen"}},
			},
			conns: []Connector{conn("orders", 4), {Name: "gen", Tasks: 2, Plugins: []string{"datagen"}}, {Name: "pg", Tasks: 1, Plugins: []string{"kafka", "postgres", "s3"}}},
			want: Assignment{Epoch: 1,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0, 1, 3), "w3": append(tasks("gen", 0, 1), tasks("orders", 2)...)},
				Committers: map[string]Committer{"gen": {Worker: "w3", Epoch: 1}, "orders": {Worker: "w1", Epoch: 1}}},
			unplaced: []Unplaced{{Connector: "pg", Reason: "no live worker has plugins postgres, s3"}},
		},
		{
			name: "a stopped connector loses its tasks and committer and is not unplaced",
			prev: three, workers: workers(7, "w1", "w2", "w3"),
			conns: []Connector{{Name: "orders", Tasks: 6, Plugins: []string{"kafka"}, Target: store.TargetStopped}},
			want:  Assignment{Epoch: 8, Tasks: map[string][]TaskID{}, Committers: map[string]Committer{}},
		},
		{
			name: "a paused connector keeps its place",
			prev: three, workers: workers(7, "w1", "w2", "w3"),
			conns: []Connector{{Name: "orders", Tasks: 6, Plugins: []string{"kafka"}, Target: store.TargetPaused}},
			want:  three,
		},
		{
			name: "no change keeps the epoch",
			prev: three, workers: workers(3, "w2", "w3", "w1"), conns: []Connector{conn("orders", 6)},
			want: three,
		},
		{
			name: "fewer tasks drops the highest ones in place",
			prev: three, workers: workers(7, "w1", "w2", "w3"), conns: []Connector{conn("orders", 3)},
			want: Assignment{Epoch: 8,
				Tasks:      map[string][]TaskID{"w1": tasks("orders", 0), "w2": tasks("orders", 1), "w3": tasks("orders", 2)},
				Committers: map[string]Committer{"orders": {Worker: "w3", Epoch: 5}}},
		},
		{
			name: "no workers: everything is unplaced",
			prev: three, conns: []Connector{conn("orders", 6)},
			want:     Assignment{Epoch: 8, Tasks: map[string][]TaskID{}, Committers: map[string]Committer{}},
			unplaced: []Unplaced{{Connector: "orders", Reason: "no live worker"}},
		},
		{
			name: "a worker that refuses a connector (its config does not validate there) gets none of it",
			workers: []Worker{
				{ID: "w1", Plugins: []string{"kafka", "iceberg"}, Refuses: map[string]string{"orders": "plugin iceberg 0.9 does not know iceberg.tables.write-props.x"}},
				{ID: "w2", Plugins: []string{"kafka", "iceberg"}},
			},
			conns: []Connector{conn("orders", 2)},
			want: Assignment{Epoch: 1,
				Tasks:      map[string][]TaskID{"w2": tasks("orders", 0, 1)},
				Committers: map[string]Committer{"orders": {Worker: "w2", Epoch: 1}}},
		},
		{
			name: "every worker refuses: unplaced, with each worker's reason",
			workers: []Worker{
				{ID: "w1", Refuses: map[string]string{"orders": "no plugin named iceberg"}},
				{ID: "w2", Refuses: map[string]string{"orders": "no plugin named iceberg"}},
			},
			conns:    []Connector{{Name: "orders", Tasks: 1}},
			want:     Assignment{Tasks: map[string][]TaskID{}, Committers: map[string]Committer{}},
			unplaced: []Unplaced{{Connector: "orders", Reason: "every live worker refuses it: worker w1: no plugin named iceberg; worker w2: no plugin named iceberg"}},
		},
		{
			name:     "plugins spread over workers but none has all",
			workers:  []Worker{{ID: "a", Plugins: []string{"kafka"}}, {ID: "b", Plugins: []string{"iceberg"}}},
			conns:    []Connector{conn("orders", 1)},
			want:     Assignment{Tasks: map[string][]TaskID{}, Committers: map[string]Committer{}},
			unplaced: []Unplaced{{Connector: "orders", Reason: "no live worker has all of the plugins iceberg, kafka (each has some)"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustAssign(t, tc.prev, tc.workers, tc.conns)
			if !reflect.DeepEqual(r.Assignment, normalize(tc.want)) {
				t.Errorf("assignment\n got %s\nwant %s", js(r.Assignment), js(normalize(tc.want)))
			}
			if !reflect.DeepEqual(r.Unplaced, tc.unplaced) {
				t.Errorf("unplaced = %v, want %v", r.Unplaced, tc.unplaced)
			}
			if r.Changed != (tc.want.Epoch != tc.prev.Epoch) {
				t.Errorf("changed = %v with epoch %d → %d", r.Changed, tc.prev.Epoch, r.Assignment.Epoch)
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAssignErrors(t *testing.T) {
	for _, tc := range []struct {
		ws   []Worker
		cs   []Connector
		want string
	}{
		{workers(0, "w1", "w1"), nil, `worker "w1" is listed twice`},
		{[]Worker{{}}, nil, "a worker without an id"},
		{nil, []Connector{conn("c", 1), conn("c", 2)}, `connector "c" is listed twice`},
		{nil, []Connector{conn("c", -1)}, `connector "c": task count -1 is negative`},
		{nil, []Connector{{Tasks: 1}}, "a connector without a name"},
	} {
		if _, err := Assign(Assignment{}, tc.ws, tc.cs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestAssignJoinSequence follows a join to the end: the new worker gets
// its share only through revocations released one by one.
func TestAssignJoinSequence(t *testing.T) {
	cs := []Connector{conn("orders", 8), conn("clicks", 4)}
	r := mustAssign(t, Assignment{}, workers(0, "w1", "w2"), cs)
	a := r.Assignment
	applied := map[string]int64{"w1": a.Epoch, "w2": a.Epoch, "w3": 0}
	// w3 joins; w1 applies at once, w2 lags one round.
	r = mustAssign(t, a, ws(applied), cs)
	a = r.Assignment
	if len(a.Revoking) != 4 || len(a.Tasks["w3"]) != 0 {
		t.Fatalf("join: %s", js(a))
	}
	moved := 0
	for _, rev := range a.Revoking {
		if rev.To != "w3" {
			t.Errorf("revocation %v not meant for w3", rev)
		}
		moved++
	}
	applied["w1"], applied["w3"] = a.Epoch, a.Epoch
	r = mustAssign(t, a, ws(applied), cs)
	a = r.Assignment
	if len(a.Tasks["w3"]) != 2 || len(a.Revoking) != 2 {
		t.Fatalf("after w1 applied: %s", js(a))
	}
	for _, rev := range a.Revoking {
		if rev.From != "w2" {
			t.Errorf("w1 applied, yet %v is still withheld", rev)
		}
	}
	applied["w2"] = a.Epoch
	r = mustAssign(t, a, ws(applied), cs)
	a = r.Assignment
	if len(a.Tasks["w1"]) != 4 || len(a.Tasks["w2"]) != 4 || len(a.Tasks["w3"]) != 4 || len(a.Revoking) != 0 {
		t.Fatalf("settled: %s", js(a))
	}
	if moved != 4 {
		t.Errorf("%d tasks moved, want 4 (12 tasks from 2 to 3 workers)", moved)
	}
	// Settled: another round changes nothing.
	if r2 := mustAssign(t, a, ws(applied), cs); r2.Changed || r2.Assignment.Epoch != a.Epoch {
		t.Errorf("settled assignment changed: %s", js(r2.Assignment))
	}
}

func ws(applied map[string]int64) []Worker {
	var out []Worker
	for _, id := range slices.Sorted(maps.Keys(applied)) {
		out = append(out, Worker{ID: id, Plugins: []string{"kafka", "iceberg"}, Applied: applied[id]})
	}
	return out
}

// randomCluster draws workers (some lacking plugins) and connectors (some
// stopped, some needing a rare plugin).
func randomCluster(rng *rand.Rand, ids []string) ([]Worker, []Connector) {
	plugins := []string{"kafka", "iceberg", "datagen", "rare"}
	var wsOut []Worker
	for _, id := range ids {
		w := Worker{ID: id}
		for _, p := range plugins {
			if p == "kafka" || rng.IntN(4) != 0 {
				if p != "rare" || rng.IntN(3) == 0 {
					w.Plugins = append(w.Plugins, p)
				}
			}
		}
		wsOut = append(wsOut, w)
	}
	var cs []Connector
	for i := range 1 + rng.IntN(6) {
		c := Connector{Name: fmt.Sprintf("c%d", i), Tasks: rng.IntN(9), Plugins: []string{"kafka", plugins[1+rng.IntN(3)]}, Target: store.TargetRunning}
		switch rng.IntN(6) {
		case 0:
			c.Target = store.TargetStopped
		case 1:
			c.Target = store.TargetPaused
		}
		cs = append(cs, c)
	}
	return wsOut, cs
}

// TestAssignProperties drives random clusters (fixed seed) through joins,
// deaths, plugin changes and connector changes, every worker applying
// each assignment with a random lag, and checks after every step that no
// task jumps between two live workers, that epochs only grow, and, once
// settled, that every placeable task runs exactly once and the load is
// balanced.
func TestAssignProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2026))
	all := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
	for round := range 300 {
		live := slices.Clone(all[:1+rng.IntN(len(all))])
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		wsNow, cs := randomCluster(rng, live)
		var a Assignment
		applied := map[string]int64{}
		committerEpoch := map[string]int64{}
		for step := range 40 {
			if step%8 == 7 { // churn: a worker joins or dies, a connector resizes
				if rng.IntN(2) == 0 && len(wsNow) > 1 {
					wsNow = slices.Delete(wsNow, 0, 1)
				} else {
					extra, _ := randomCluster(rng, []string{fmt.Sprintf("n%d-%d", round, step)})
					wsNow = append(wsNow, extra...)
				}
				cs[rng.IntN(len(cs))].Tasks = rng.IntN(9)
			}
			for i := range wsNow {
				wsNow[i].Applied = applied[wsNow[i].ID]
			}
			prev := a
			r := mustAssign(t, prev, shuffled(rng, wsNow), shuffled(rng, cs))
			a = r.Assignment
			if r.Changed && a.Epoch != prev.Epoch+1 || !r.Changed && a.Epoch != prev.Epoch {
				t.Fatalf("round %d step %d: epoch %d → %d (changed %v)", round, step, prev.Epoch, a.Epoch, r.Changed)
			}
			// Determinism: the same call with the inputs in another order.
			again := mustAssign(t, prev, shuffled(rng, wsNow), shuffled(rng, cs))
			if js(again) != js(r) {
				t.Fatalf("round %d step %d: not deterministic:\n%s\n%s", round, step, js(r), js(again))
			}
			checkTwoPhase(t, prev, a, wsNow)
			for name, c := range a.Committers {
				if old, ok := prev.Committers[name]; ok && old.Worker != c.Worker && c.Epoch <= old.Epoch {
					t.Fatalf("round %d step %d: committer of %s moved %v → %v without a higher epoch", round, step, name, old, c)
				}
				if c.Epoch < committerEpoch[name] {
					t.Fatalf("round %d step %d: committer epoch of %s went back %d → %d", round, step, name, committerEpoch[name], c.Epoch)
				}
				committerEpoch[name] = c.Epoch
			}
			for _, w := range wsNow { // each worker applies, some one step late
				if rng.IntN(3) != 0 {
					applied[w.ID] = a.Epoch
				}
			}
		}
		// Settle: everyone applies until nothing changes.
		for i := 0; ; i++ {
			for j := range wsNow {
				wsNow[j].Applied = a.Epoch
			}
			r := mustAssign(t, a, wsNow, cs)
			checkTwoPhase(t, a, r.Assignment, wsNow)
			a = r.Assignment
			if !r.Changed {
				break
			}
			if i > 20 {
				t.Fatalf("round %d: no fixpoint after %d rounds", round, i)
			}
		}
		checkSettled(t, round, a, wsNow, cs)
	}
}

func shuffled[T any](rng *rand.Rand, in []T) []T {
	out := slices.Clone(in)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// checkTwoPhase fails if a task went straight from one live worker to
// another.
func checkTwoPhase(t *testing.T, prev, next Assignment, live []Worker) {
	t.Helper()
	was := map[TaskID]string{}
	for id, ts := range prev.Tasks {
		for _, task := range ts {
			was[task] = id
		}
	}
	for id, ts := range next.Tasks {
		for _, task := range ts {
			old, ok := was[task]
			if ok && old != id && slices.ContainsFunc(live, func(w Worker) bool { return w.ID == old }) {
				t.Fatalf("epoch %d: task %s moved from live %s to %s without a revoke", next.Epoch, task, old, id)
			}
		}
	}
}

func checkSettled(t *testing.T, round int, a Assignment, wsNow []Worker, cs []Connector) {
	t.Helper()
	if len(a.Revoking) > 0 {
		t.Fatalf("round %d: settled with withheld tasks %v", round, a.Revoking)
	}
	load := map[string]int{}
	committers := map[string]int{}
	owner := map[TaskID]string{}
	for id, ts := range a.Tasks {
		load[id] = len(ts)
		for _, task := range ts {
			owner[task] = id
		}
	}
	for _, c := range a.Committers {
		committers[c.Worker]++
	}
	eligible := func(c Connector) []string {
		var out []string
		for _, w := range wsNow {
			if hasAll(w.Plugins, c.Plugins) {
				out = append(out, w.ID)
			}
		}
		return out
	}
	for _, c := range cs {
		el := eligible(c)
		if c.Target == store.TargetStopped || len(el) == 0 {
			for task := range owner {
				if task.Connector == c.Name {
					t.Fatalf("round %d: %s runs though stopped or unplaceable", round, task)
				}
			}
			continue
		}
		cm, ok := a.Committers[c.Name]
		if !ok || !slices.Contains(el, cm.Worker) {
			t.Fatalf("round %d: connector %s: committer %v not on an eligible worker %v", round, c.Name, cm, el)
		}
		for i := range c.Tasks {
			task := TaskID{c.Name, i}
			w, ok := owner[task]
			if !ok || !slices.Contains(el, w) {
				t.Fatalf("round %d: task %s on %q, eligible %v", round, task, w, el)
			}
			for _, b := range el {
				if load[w] > load[b]+1 {
					t.Fatalf("round %d: unbalanced: %s on %s (%d tasks) though eligible %s has %d: %s", round, task, w, load[w], b, load[b], js(a))
				}
			}
		}
		for _, b := range el {
			if committers[cm.Worker] > committers[b]+1 {
				t.Fatalf("round %d: committers unbalanced: %s has %d, eligible %s has %d", round, cm.Worker, committers[cm.Worker], b, committers[b])
			}
		}
	}
	if len(owner) != countWanted(cs, eligible) {
		t.Fatalf("round %d: %d tasks placed, want %d", round, len(owner), countWanted(cs, eligible))
	}
}

func countWanted(cs []Connector, eligible func(Connector) []string) int {
	n := 0
	for _, c := range cs {
		if c.Target != store.TargetStopped && len(eligible(c)) > 0 {
			n += c.Tasks
		}
	}
	return n
}
