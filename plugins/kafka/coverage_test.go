package kafka

import (
	"testing"
	"time"
)

func TestCoverageWatchRejoinsOnlyWhenStuck(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	stuck := groupView{stable: true, held: map[string]int{"a": 3, "b": 0}, unassigned: []string{"t/0", "t/1", "t/2"}}

	b := &coverageWatch{self: "b"}
	a := &coverageWatch{self: "a"}
	for _, w := range []*coverageWatch{a, b} {
		if w.observe(t0, stuck) {
			t.Fatalf("%s rejoined at the first sight of unassigned partitions", w.self)
		}
		if w.observe(t0.Add(coverageStuck-time.Second), stuck) {
			t.Fatalf("%s rejoined before coverageStuck", w.self)
		}
	}
	if a.observe(t0.Add(coverageStuck), stuck) {
		t.Fatal("a, which holds more partitions than b, rejoined")
	}
	if !b.observe(t0.Add(coverageStuck), stuck) {
		t.Fatal("b, the member holding the fewest partitions, did not rejoin after coverageStuck")
	}
	// The same picture right after: b waits for its backoff and for a
	// fresh coverageStuck.
	later := t0.Add(coverageStuck + coverageEvery)
	if b.observe(later, stuck) || b.observe(later.Add(coverageStuck), stuck) {
		t.Fatal("b rejoined again within its backoff")
	}
	if !b.observe(t0.Add(coverageStuck+2*coverageStuck+coverageEvery), stuck) {
		t.Fatal("b did not rejoin again once its backoff had passed")
	}
}

func TestCoverageWatchForgetsWhatChanged(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	w := &coverageWatch{self: "b"}
	stuck := groupView{stable: true, held: map[string]int{"a": 3, "b": 0}, unassigned: []string{"t/0"}}
	w.observe(t0, stuck)
	// A rebalance under way, then a group with everything assigned: the
	// clock starts again at the next sight.
	w.observe(t0.Add(coverageEvery), groupView{stable: false, held: stuck.held, unassigned: stuck.unassigned})
	if w.observe(t0.Add(coverageStuck), stuck) {
		t.Fatal("rejoined although the group rebalanced in between")
	}
	// Another member joined: a different picture, the clock starts again.
	moved := groupView{stable: true, held: map[string]int{"a": 3, "b": 0, "c": 0}, unassigned: []string{"t/0"}}
	if w.observe(t0.Add(2*coverageStuck), moved) {
		t.Fatal("rejoined on the first sight of a new member set")
	}
	if !w.observe(t0.Add(3*coverageStuck), moved) {
		t.Fatal("did not rejoin once the new picture had lasted coverageStuck")
	}
	if w.observe(t0.Add(4*coverageStuck), groupView{stable: true, held: moved.held}) {
		t.Fatal("rejoined with every partition assigned")
	}
}

func TestGroupViewChosenTiesToSmallestID(t *testing.T) {
	g := groupView{held: map[string]int{"c": 0, "b": 0, "a": 2}}
	if got := g.chosen(); got != "b" {
		t.Fatalf("chosen = %q, want b (fewest partitions, smallest id)", got)
	}
}
