package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/floehq/floe/host/store"
)

// TaskID names one task of a connector.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

func (t TaskID) String() string { return fmt.Sprintf("%s-%d", t.Connector, t.Task) }

func compareTasks(a, b TaskID) int {
	return cmp.Or(strings.Compare(a.Connector, b.Connector), cmp.Compare(a.Task, b.Task))
}

// Committer is where a connector's committer runs, and the epoch it
// commits with.
type Committer struct {
	Worker string `json:"worker"`
	// Epoch is the assignment epoch at which the committer was placed on
	// Worker: it grows with every move, never repeats for a connector
	// (not even after a stop or a delete and re-create), and a committer
	// commits only with the highest epoch the table has seen, so a
	// superseded one is fenced at the table.
	Epoch int64 `json:"epoch"`
}

// Revocation is a task taken off a live worker to balance the load and
// withheld from everyone until that worker has applied the assignment
// that took it away (two-phase revoke): then no two workers run it at
// once.
type Revocation struct {
	Task TaskID `json:"task"`
	// From is the worker that ran it.
	From string `json:"from"`
	// To is the worker it is meant for once released.
	To string `json:"to"`
	// Epoch is the assignment that revoked it; From has let go once its
	// applied epoch reaches it.
	Epoch int64 `json:"epoch"`
}

// Assignment is the leader's decision: which worker runs which tasks and
// which committer. It is the Data of the config topic's floe-assignment
// record (kafkastore.Assignment), as JSON.
type Assignment struct {
	// Epoch grows by one with every change; 0 is the empty assignment
	// before the first.
	Epoch int64 `json:"epoch"`
	// Tasks lists each worker's tasks, sorted; a worker with none is
	// absent.
	Tasks map[string][]TaskID `json:"tasks"`
	// Committers holds each placed connector's committer.
	Committers map[string]Committer `json:"committers"`
	// Revoking lists the withheld tasks, sorted by task.
	Revoking []Revocation `json:"revoking,omitempty"`
}

// WorkerTasks returns the tasks of worker id.
func (a Assignment) WorkerTasks(id string) []TaskID { return a.Tasks[id] }

// Worker is a live member of the cluster as the assignor sees it.
type Worker struct {
	ID string
	// Plugins names the plugins the worker has.
	Plugins []string
	// Applied is the epoch of the last assignment the worker finished
	// applying: it stopped every task that assignment took away from it.
	Applied int64
	// Refuses names, by connector, why the worker cannot run it (its
	// config does not validate there: a plugin missing, a key its plugin
	// version does not know). It gets nothing of those connectors.
	Refuses map[string]string
}

// Connector is a connector as the assignor sees it.
type Connector struct {
	Name string
	// Tasks is the task count; tasks are 0 … Tasks-1.
	Tasks int
	// Plugins names the plugins a worker needs to run it (source, sink,
	// partitioner, maintenance).
	Plugins []string
	// Target is the target state: STOPPED places nothing (no tasks, no
	// committer); RUNNING and PAUSED are placed alike (a paused task is
	// placed and idle).
	Target store.TargetState
}

// Unplaced is a connector that no live worker can run.
type Unplaced struct {
	Connector string
	// Reason names what is missing ("no live worker has plugin iceberg").
	Reason string
}

// Result is what Assign decided.
type Result struct {
	// Assignment is the next assignment: prev itself (same epoch) when
	// nothing changed.
	Assignment Assignment
	// Changed is true when Assignment differs from prev.
	Changed bool
	// Unplaced lists, sorted by name, the connectors (not STOPPED) that
	// no live worker can run; they get no tasks and no committer.
	Unplaced []Unplaced
}

// Assign computes the next assignment from the previous one, the live
// workers and the connectors. It is a pure function: the same inputs give
// the same result, whatever their order.
//
// The rules:
//   - Eligible: a worker can run a connector when it has every plugin the
//     connector needs and does not refuse it (Worker.Refuses).
//   - Sticky: a task stays on its worker while that worker lives and is
//     eligible.
//   - Dead or ineligible: the task is placed again at once on the eligible
//     worker with the fewest tasks. A dead worker may still run it (a
//     zombie); the table's fence (ranges from the frontier, the committer
//     epoch) makes that harmless.
//   - Balanced: no worker runs two tasks more than an eligible worker of
//     the task's connector (so task counts differ by at most 1 between
//     workers that are eligible alike). Ties go to the worker with fewer
//     tasks of the same connector, then to the smaller id.
//   - Two-phase revoke: a task moved off a live worker for balance is
//     first only revoked (listed in Revoking, run by no one); it is placed
//     on its new worker by the first Assign after the old worker's applied
//     epoch reached the revoking epoch, or at once if the old worker
//     dies.
//   - Committers: exactly one per placed connector, sticky, placed and
//     balanced like tasks but counted apart. A committer that moves (its
//     worker died, became ineligible, or for balance) moves at once and
//     takes the new epoch; the superseded one is fenced at the table.
//   - STOPPED connectors and connectors no worker can run get nothing;
//     the latter are listed in Unplaced with the reason.
//
// Invalid input (duplicate worker ids or connector names, empty names, a
// negative task count) is an error naming the worker or connector.
func Assign(prev Assignment, workers []Worker, connectors []Connector) (Result, error) {
	s, err := newAssignState(prev, workers, connectors)
	if err != nil {
		return Result{}, err
	}
	next := s.run()
	changed := !equalAssignments(prev, next)
	if !changed {
		next = normalize(prev)
	}
	return Result{Assignment: next, Changed: changed, Unplaced: s.unplaced}, nil
}

// assignState is one Assign call's working state.
type assignState struct {
	prev    Assignment
	epoch   int64 // the next epoch, used if anything changes
	workers map[string]Worker
	ids     []string // live worker ids, sorted
	conns   map[string]Connector
	// eligible lists each placeable connector's eligible workers, sorted.
	eligible map[string][]string
	unplaced []Unplaced

	owner    map[TaskID]string // placed task → worker
	withheld map[TaskID]Revocation
	load     map[string]int // placed tasks plus withheld tasks meant for the worker
	connLoad map[string]map[string]int
}

func newAssignState(prev Assignment, workers []Worker, connectors []Connector) (*assignState, error) {
	s := &assignState{
		prev: prev, epoch: prev.Epoch + 1,
		workers: map[string]Worker{}, conns: map[string]Connector{}, eligible: map[string][]string{},
		owner: map[TaskID]string{}, withheld: map[TaskID]Revocation{}, load: map[string]int{}, connLoad: map[string]map[string]int{},
	}
	for _, w := range workers {
		if w.ID == "" {
			return nil, fmt.Errorf("cluster: assign: a worker without an id")
		}
		if _, dup := s.workers[w.ID]; dup {
			return nil, fmt.Errorf("cluster: assign: worker %q is listed twice", w.ID)
		}
		s.workers[w.ID] = w
	}
	s.ids = slices.Sorted(maps.Keys(s.workers))
	for _, c := range connectors {
		if c.Name == "" {
			return nil, fmt.Errorf("cluster: assign: a connector without a name")
		}
		if _, dup := s.conns[c.Name]; dup {
			return nil, fmt.Errorf("cluster: assign: connector %q is listed twice", c.Name)
		}
		if c.Tasks < 0 {
			return nil, fmt.Errorf("cluster: assign: connector %q: task count %d is negative", c.Name, c.Tasks)
		}
		s.conns[c.Name] = c
	}
	for _, name := range slices.Sorted(maps.Keys(s.conns)) {
		c := s.conns[name]
		if c.Target == store.TargetStopped {
			continue
		}
		var el []string
		for _, id := range s.ids {
			_, refused := s.workers[id].Refuses[name]
			if hasAll(s.workers[id].Plugins, c.Plugins) && !refused {
				el = append(el, id)
			}
		}
		if len(el) == 0 {
			s.unplaced = append(s.unplaced, Unplaced{Connector: name, Reason: s.why(c)})
			continue
		}
		s.eligible[name] = el
	}
	return s, nil
}

func hasAll(have, need []string) bool {
	for _, p := range need {
		if !slices.Contains(have, p) {
			return false
		}
	}
	return true
}

// why explains why no live worker can run c.
func (s *assignState) why(c Connector) string {
	if len(s.ids) == 0 {
		return "no live worker"
	}
	var refusals []string
	for _, id := range s.ids {
		if reason, ok := s.workers[id].Refuses[c.Name]; ok {
			refusals = append(refusals, fmt.Sprintf("worker %s: %s", id, reason))
		}
	}
	if len(refusals) == len(s.ids) {
		return "every live worker refuses it: " + strings.Join(refusals, "; ")
	}
	var missing []string
	for _, p := range slices.Sorted(slices.Values(c.Plugins)) {
		found := false
		for _, id := range s.ids {
			found = found || slices.Contains(s.workers[id].Plugins, p)
		}
		if !found && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	switch len(missing) {
	case 0:
		return fmt.Sprintf("no live worker has all of the plugins %s (each has some)", strings.Join(slices.Sorted(slices.Values(c.Plugins)), ", "))
	case 1:
		return fmt.Sprintf("no live worker has plugin %s", missing[0])
	}
	return fmt.Sprintf("no live worker has plugins %s", strings.Join(missing, ", "))
}

// wanted reports whether t is a task that should run.
func (s *assignState) wanted(t TaskID) bool {
	_, ok := s.eligible[t.Connector]
	return ok && t.Task < s.conns[t.Connector].Tasks
}

func (s *assignState) canRun(id string, conn string) bool {
	return slices.Contains(s.eligible[conn], id)
}

func (s *assignState) addLoad(id, conn string, d int) {
	s.load[id] += d
	if s.connLoad[id] == nil {
		s.connLoad[id] = map[string]int{}
	}
	s.connLoad[id][conn] += d
}

func (s *assignState) place(t TaskID, id string) {
	s.owner[t] = id
	s.addLoad(id, t.Connector, 1)
}

// least returns the eligible worker for conn with the lowest load (then
// fewest tasks of conn, then smallest id).
func (s *assignState) least(conn string) string {
	best := ""
	for _, id := range s.eligible[conn] {
		if best == "" || s.lighter(id, best, conn) {
			best = id
		}
	}
	return best
}

func (s *assignState) lighter(a, b, conn string) bool {
	if s.load[a] != s.load[b] {
		return s.load[a] < s.load[b]
	}
	if s.connLoad[a][conn] != s.connLoad[b][conn] {
		return s.connLoad[a][conn] < s.connLoad[b][conn]
	}
	return a < b
}

func (s *assignState) run() Assignment {
	// 1. Keep what may stay.
	var free []TaskID
	for _, id := range slices.Sorted(maps.Keys(s.prev.Tasks)) {
		for _, t := range s.prev.Tasks[id] {
			if !s.wanted(t) {
				continue // stopped, deleted, fewer tasks, or unplaceable: taken away
			}
			if _, live := s.workers[id]; live && s.canRun(id, t.Connector) {
				if _, dup := s.owner[t]; !dup {
					s.place(t, id)
				}
				continue
			}
			free = append(free, t) // dead or ineligible worker: move at once
		}
	}
	// 2. Withheld tasks: release those whose old worker let go or died;
	// keep the others withheld, counted on the worker they are meant for.
	revs := slices.Clone(s.prev.Revoking)
	slices.SortFunc(revs, func(a, b Revocation) int { return compareTasks(a.Task, b.Task) })
	var still []Revocation
	for _, r := range revs {
		if !s.wanted(r.Task) {
			continue
		}
		if _, placed := s.owner[r.Task]; placed {
			continue
		}
		from, live := s.workers[r.From]
		if !live || from.Applied >= r.Epoch {
			if _, ok := s.workers[r.To]; ok && s.canRun(r.To, r.Task.Connector) {
				s.place(r.Task, r.To)
			} else {
				free = append(free, r.Task)
			}
			continue
		}
		still = append(still, r)
	}
	for _, r := range still {
		if _, ok := s.workers[r.To]; !ok || !s.canRun(r.To, r.Task.Connector) {
			r.To = s.least(r.Task.Connector)
		}
		s.withheld[r.Task] = r
		s.addLoad(r.To, r.Task.Connector, 1)
	}
	// 3. New tasks and tasks of dead workers.
	for _, name := range slices.Sorted(maps.Keys(s.eligible)) {
		for i := range s.conns[name].Tasks {
			t := TaskID{Connector: name, Task: i}
			if _, placed := s.owner[t]; placed {
				continue
			}
			if _, held := s.withheld[t]; held {
				continue
			}
			if !slices.Contains(free, t) {
				free = append(free, t)
			}
		}
	}
	slices.SortFunc(free, compareTasks)
	for _, t := range slices.Compact(free) {
		s.place(t, s.least(t.Connector))
	}
	// 4. Balance: revoke from the heaviest worker while an eligible worker
	// is lighter by two or more.
	for s.balanceOnce() {
	}
	return Assignment{Epoch: s.epoch, Tasks: s.tasksByWorker(), Committers: s.committers(), Revoking: s.revoking()}
}

// balanceOnce revokes one task from an overloaded worker, if any, and
// reports whether it did.
func (s *assignState) balanceOnce() bool {
	byLoad := slices.Clone(s.ids)
	slices.SortStableFunc(byLoad, func(a, b string) int { return cmp.Compare(s.load[b], s.load[a]) })
	for _, from := range byLoad {
		var bestT TaskID
		bestTo, bestGain := "", 0
		for _, t := range s.ownedBy(from) {
			to := s.least(t.Connector)
			if to == from || s.load[from]-s.load[to] < 2 {
				continue
			}
			// Prefer moving the connector from has most of, relative to
			// the receiver: it spreads each connector's tasks too.
			gain := s.connLoad[from][t.Connector] - s.connLoad[to][t.Connector]
			if bestTo == "" || gain > bestGain || (gain == bestGain && s.lighter(to, bestTo, t.Connector)) {
				bestT, bestTo, bestGain = t, to, gain
			}
		}
		if bestTo == "" {
			continue
		}
		delete(s.owner, bestT)
		s.addLoad(from, bestT.Connector, -1)
		s.withheld[bestT] = Revocation{Task: bestT, From: from, To: bestTo, Epoch: s.epoch}
		s.addLoad(bestTo, bestT.Connector, 1)
		return true
	}
	return false
}

// ownedBy lists the tasks placed on id, in reverse order: the highest
// task numbers move first, so a connector's low tasks stay put.
func (s *assignState) ownedBy(id string) []TaskID {
	var out []TaskID
	for t, w := range s.owner {
		if w == id {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b TaskID) int { return compareTasks(b, a) })
	return out
}

func (s *assignState) tasksByWorker() map[string][]TaskID {
	out := map[string][]TaskID{}
	for t, id := range s.owner {
		out[id] = append(out[id], t)
	}
	for _, ts := range out {
		slices.SortFunc(ts, compareTasks)
	}
	return out
}

func (s *assignState) revoking() []Revocation {
	out := slices.Collect(maps.Values(s.withheld))
	slices.SortFunc(out, func(a, b Revocation) int { return compareTasks(a.Task, b.Task) })
	return out
}

// committers places one committer per placed connector: sticky, then
// balanced by committer count among eligible workers.
func (s *assignState) committers() map[string]Committer {
	out := map[string]Committer{}
	count := map[string]int{}
	names := slices.Sorted(maps.Keys(s.eligible))
	var free []string
	for _, name := range names {
		if c, ok := s.prev.Committers[name]; ok && s.canRun(c.Worker, name) {
			out[name] = c
			count[c.Worker]++
			continue
		}
		free = append(free, name)
	}
	leastC := func(name string) string {
		best := ""
		for _, id := range s.eligible[name] {
			if best == "" || count[id] < count[best] {
				best = id
			}
		}
		return best
	}
	for _, name := range free {
		id := leastC(name)
		out[name] = Committer{Worker: id, Epoch: s.epoch}
		count[id]++
	}
	for moved := true; moved; {
		moved = false
		for _, name := range slices.Backward(names) {
			from := out[name].Worker
			to := leastC(name)
			if count[from]-count[to] >= 2 {
				out[name] = Committer{Worker: to, Epoch: s.epoch}
				count[from]--
				count[to]++
				moved = true
				break
			}
		}
	}
	return out
}

// normalize returns a with nil maps made empty and empty task lists
// dropped, the form Assign returns.
func normalize(a Assignment) Assignment {
	out := Assignment{Epoch: a.Epoch, Tasks: map[string][]TaskID{}, Committers: map[string]Committer{}}
	for id, ts := range a.Tasks {
		if len(ts) > 0 {
			ts = slices.Clone(ts)
			slices.SortFunc(ts, compareTasks)
			out.Tasks[id] = ts
		}
	}
	maps.Copy(out.Committers, a.Committers)
	if len(a.Revoking) > 0 {
		out.Revoking = slices.Clone(a.Revoking)
		slices.SortFunc(out.Revoking, func(a, b Revocation) int { return compareTasks(a.Task, b.Task) })
	}
	return out
}

// equalAssignments compares a and b but for the epoch.
func equalAssignments(a, b Assignment) bool {
	a, b = normalize(a), normalize(b)
	return maps.EqualFunc(a.Tasks, b.Tasks, slices.Equal) &&
		maps.Equal(a.Committers, b.Committers) &&
		slices.Equal(a.Revoking, b.Revoking)
}
