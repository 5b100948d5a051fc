package kafkastore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/host/store"
)

// Keys of the status topic.
const (
	PrefixConnectorStatus = "status-connector-"
	// PrefixTaskStatus is followed by <connector>-<task id>.
	PrefixTaskStatus = "status-task-"
	PrefixTopics     = "topics-"
	PrefixWorker     = "worker-"
)

// ErrStaleGeneration is wrapped by a status write the readers ignored: the
// key holds a record of another worker with a newer generation.
var ErrStaleGeneration = errors.New("stale generation")

// ConnectorStatus is a status-connector-<name> record.
type ConnectorStatus struct {
	State    string `json:"state"`
	Trace    string `json:"trace,omitempty"`
	WorkerID string `json:"worker_id"`
	// Generation is the assignment generation the worker wrote under.
	Generation int64     `json:"generation"`
	Updated    time.Time `json:"updated"`
}

// TaskStatus is a status-task-<name>-<id> record.
type TaskStatus struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	Trace    string `json:"trace,omitempty"`
	WorkerID string `json:"worker_id"`
	// Generation is the assignment generation the worker wrote under.
	Generation int64     `json:"generation"`
	Updated    time.Time `json:"updated"`
}

// WorkerInfo is a worker-<id> record: a member of the cluster, written at
// start and deleted on clean exit.
type WorkerInfo struct {
	ID      string    `json:"id"`
	URL     string    `json:"url"`
	Version string    `json:"version"`
	Commit  string    `json:"commit"`
	Plugins []Plugin  `json:"plugins"`
	Started time.Time `json:"started"`
	// Applied is the epoch of the last assignment the worker finished
	// applying (it stopped what that assignment took away).
	Applied int64 `json:"applied,omitempty"`
	// Protocol is the cluster protocol the worker speaks (see
	// distributed.Protocol); 0 for workers before it had one.
	Protocol int `json:"protocol,omitempty"`
	// Refuses names, by connector, why the worker cannot run it.
	Refuses map[string]string `json:"refuses,omitempty"`
}

// Plugin is one plugin a worker has.
type Plugin struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// topicsRecord is a topics-<name> record.
type topicsRecord struct {
	Topics  []string  `json:"topics"`
	Updated time.Time `json:"updated"`
}

// Statuses is the status store on status.storage.topic: connector and task
// statuses, the topics each connector used, and the workers' member
// records. It implements [store.StatusStore]. Every worker writes its own
// records through a non-transactional producer; a write returns
// once this store's reader applied it. The getters read the topic to its
// end first.
//
// # Generations
//
// In log order, a stale generation never overwrites a newer one: a reader
// applies a status record only if the key has no record yet, or the
// previous record came from the same worker, or the new record's
// generation is at least the previous one's (Kafka Connect's putSafe
// rule); tombstones always apply. A write the readers ignore fails with
// ErrStaleGeneration.
//
// What this cannot guarantee (Connect says the same of its own): Kafka
// has no conditional write, so the rule can only judge records in the
// order the log holds them.
//   - Two workers writing one key at the same generation both win in turn:
//     the later offset stays.
//   - A zombie process with the same worker id overwrites its successor's
//     newer record (same worker, so the rule lets it).
//   - A delete removes whatever generation was there, a zombie's too.
//   - The writer does not check before it sends, so a stale worker learns
//     it lost only from the error after its write.
//   - Compaction keeps only a key's newest record: a rejected stale record
//     that is the newest outlives the newer one it lost to, and a reader
//     starting after compaction applies it.
//
// Statuses are for people and the REST API, never for correctness.
type Statuses struct {
	t  *Table
	mu sync.Mutex
	// gen is the generation PutStatus writes with.
	gen int64
}

var _ store.StatusStore = (*Statuses)(nil)

// OpenStatuses creates status.storage.topic if missing (compacted, with
// status.storage.partitions) or validates it, and reads it to its end.
func OpenStatuses(ctx context.Context, s Settings, opts Options) (*Statuses, error) {
	t, err := openTable(ctx, s, s.StatusTopic, opts, TableConfig{Admit: admitStatus})
	if err != nil {
		return nil, err
	}
	return &Statuses{t: t}, nil
}

// statusOwner is what admitStatus reads of a status record.
type statusOwner struct {
	WorkerID   string `json:"worker_id"`
	Generation int64  `json:"generation"`
}

// admitStatus is the putSafe rule (see Statuses).
func admitStatus(next Record, get func(string) (Record, bool)) bool {
	isStatus := strings.HasPrefix(next.Key, PrefixConnectorStatus) || strings.HasPrefix(next.Key, PrefixTaskStatus)
	if next.Deleted() || !isStatus {
		return true
	}
	prev, ok := get(next.Key)
	if !ok {
		return true
	}
	var p, n statusOwner
	if json.Unmarshal(prev.Data, &p) != nil || json.Unmarshal(next.Data, &n) != nil {
		return true
	}
	return p.WorkerID == n.WorkerID || n.Generation >= p.Generation
}

// Table returns the store's table.
func (s *Statuses) Table() *Table { return s.t }

// Close closes the store's clients.
func (s *Statuses) Close() { s.t.Close() }

// ReadToEnd reads the topic to its end.
func (s *Statuses) ReadToEnd(ctx context.Context) error { return s.t.ReadToEnd(ctx) }

// SetGeneration sets the generation PutStatus stamps on its records (the
// worker's current assignment generation; 0 until set).
func (s *Statuses) SetGeneration(gen int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen = gen
}

func (s *Statuses) generation() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func taskKey(name string, id int) string { return PrefixTaskStatus + name + "-" + strconv.Itoa(id) }

// write writes muts and words a rejection as a stale generation.
func (s *Statuses) write(ctx context.Context, muts ...Mutation) error {
	_, err := s.t.Write(ctx, muts...)
	if errors.Is(err, ErrRejected) {
		return fmt.Errorf("%w: %w", ErrStaleGeneration, err)
	}
	return err
}

// PutConnectorStatus writes the connector's status.
func (s *Statuses) PutConnectorStatus(ctx context.Context, name string, st ConnectorStatus) error {
	if st.Updated.IsZero() {
		st.Updated = time.Now().UTC()
	}
	return s.write(ctx, Mutation{Key: PrefixConnectorStatus + name, Value: st})
}

// PutTaskStatus writes one task's status (st.ID is the task).
func (s *Statuses) PutTaskStatus(ctx context.Context, name string, st TaskStatus) error {
	if st.ID < 0 {
		return fmt.Errorf("kafkastore: connector %q: task id %d", name, st.ID)
	}
	if st.Updated.IsZero() {
		st.Updated = time.Now().UTC()
	}
	return s.write(ctx, Mutation{Key: taskKey(name, st.ID), Value: st})
}

// DeleteTaskStatus deletes one task's status.
func (s *Statuses) DeleteTaskStatus(ctx context.Context, name string, id int) error {
	return s.write(ctx, Mutation{Key: taskKey(name, id)})
}

// PutStatus implements [store.StatusStore]: it writes the connector's
// record and one per task (the task id is its index) under the generation
// set by SetGeneration, and deletes the records of tasks past the last.
func (s *Statuses) PutStatus(ctx context.Context, name string, st store.Status) error {
	// Read first, so the tasks past the last include any another worker
	// wrote.
	if err := s.t.ReadToEnd(ctx); err != nil {
		return err
	}
	gen := s.generation()
	updated := st.Updated
	if updated.IsZero() {
		updated = time.Now().UTC()
	}
	muts := []Mutation{{Key: PrefixConnectorStatus + name, Value: ConnectorStatus{
		State: st.Connector.State, Trace: st.Connector.Trace, WorkerID: st.Connector.WorkerID, Generation: gen, Updated: updated,
	}}}
	for i, ts := range st.Tasks {
		muts = append(muts, Mutation{Key: taskKey(name, i), Value: TaskStatus{
			ID: i, State: ts.State, Trace: ts.Trace, WorkerID: ts.WorkerID, Generation: gen, Updated: updated,
		}})
	}
	for _, ts := range s.tasks(name) {
		if ts.ID >= len(st.Tasks) {
			muts = append(muts, Mutation{Key: taskKey(name, ts.ID)})
		}
	}
	return s.write(ctx, muts...)
}

// PutPartStatus implements [store.PartStatusStore]: it writes the given
// tasks' records and, when connector is not nil, the connector's, under
// the generation set by SetGeneration, in one transaction.
func (s *Statuses) PutPartStatus(ctx context.Context, name string, connector *store.InstanceStatus, tasks map[int]store.InstanceStatus) error {
	gen := s.generation()
	updated := time.Now().UTC()
	var muts []Mutation
	if connector != nil {
		muts = append(muts, Mutation{Key: PrefixConnectorStatus + name, Value: ConnectorStatus{
			State: connector.State, Trace: connector.Trace, WorkerID: connector.WorkerID, Generation: gen, Updated: updated,
		}})
	}
	for _, i := range slices.Sorted(maps.Keys(tasks)) {
		ts := tasks[i]
		muts = append(muts, Mutation{Key: taskKey(name, i), Value: TaskStatus{
			ID: i, State: ts.State, Trace: ts.Trace, WorkerID: ts.WorkerID, Generation: gen, Updated: updated,
		}})
	}
	if len(muts) == 0 {
		return nil
	}
	return s.write(ctx, muts...)
}

// tasks returns the applied task statuses of a connector, by id.
func (s *Statuses) tasks(name string) []TaskStatus {
	prefix := PrefixTaskStatus + name + "-"
	var out []TaskStatus
	for _, r := range s.t.Scan(prefix) {
		// "status-task-a-" also prefixes connector "a-b"'s tasks; only a
		// bare number after it is a task of "a".
		id, err := strconv.Atoi(strings.TrimPrefix(r.Key, prefix))
		if err != nil || id < 0 || strconv.Itoa(id) != strings.TrimPrefix(r.Key, prefix) {
			continue
		}
		var ts TaskStatus
		if decodeData(s.t, r, &ts) != nil {
			continue
		}
		ts.ID = id
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b TaskStatus) int { return a.ID - b.ID })
	return out
}

// ConnectorStatus returns the connector's record and its tasks' records
// by id, reading to the end first. ok is false when there is neither.
func (s *Statuses) ConnectorStatus(ctx context.Context, name string) (ConnectorStatus, []TaskStatus, bool, error) {
	if err := s.t.ReadToEnd(ctx); err != nil {
		return ConnectorStatus{}, nil, false, err
	}
	var cs ConnectorStatus
	r, found := s.t.Get(PrefixConnectorStatus + name)
	if found {
		if err := decodeData(s.t, r, &cs); err != nil {
			return ConnectorStatus{}, nil, false, err
		}
	}
	tasks := s.tasks(name)
	return cs, tasks, found || len(tasks) > 0, nil
}

// Status implements [store.StatusStore]. Tasks are indexed by id; a task
// without a record (a gap in the ids) shows as UNASSIGNED.
func (s *Statuses) Status(ctx context.Context, name string) (store.Status, error) {
	cs, tasks, ok, err := s.ConnectorStatus(ctx, name)
	if err != nil {
		return store.Status{}, err
	}
	if !ok {
		return store.Status{}, fmt.Errorf("connector %q: %w", name, store.ErrNotFound)
	}
	out := store.Status{
		Connector: store.InstanceStatus{State: cs.State, WorkerID: cs.WorkerID, Trace: cs.Trace},
		Tasks:     []store.InstanceStatus{},
		Updated:   cs.Updated,
	}
	for _, ts := range tasks {
		for len(out.Tasks) < ts.ID {
			out.Tasks = append(out.Tasks, store.InstanceStatus{State: "UNASSIGNED"})
		}
		out.Tasks = append(out.Tasks, store.InstanceStatus{State: ts.State, WorkerID: ts.WorkerID, Trace: ts.Trace})
		if ts.Updated.After(out.Updated) {
			out.Updated = ts.Updated
		}
	}
	return out, nil
}

// PutTopics implements [store.StatusStore].
func (s *Statuses) PutTopics(ctx context.Context, name string, topics []string) error {
	t := slices.Clone(topics)
	slices.Sort(t)
	t = slices.Compact(t)
	if t == nil {
		t = []string{}
	}
	return s.write(ctx, Mutation{Key: PrefixTopics + name, Value: topicsRecord{Topics: t, Updated: time.Now().UTC()}})
}

// Topics implements [store.StatusStore]: it reads to the end first.
func (s *Statuses) Topics(ctx context.Context, name string) ([]string, error) {
	if err := s.t.ReadToEnd(ctx); err != nil {
		return nil, err
	}
	r, ok := s.t.Get(PrefixTopics + name)
	if !ok {
		return []string{}, nil
	}
	var tr topicsRecord
	if err := decodeData(s.t, r, &tr); err != nil {
		return nil, err
	}
	if tr.Topics == nil {
		tr.Topics = []string{}
	}
	return tr.Topics, nil
}

// DeleteStatus implements [store.StatusStore]: it deletes the connector's
// status, its tasks' and its topics.
func (s *Statuses) DeleteStatus(ctx context.Context, name string) error {
	if err := s.t.ReadToEnd(ctx); err != nil {
		return err
	}
	muts := []Mutation{{Key: PrefixConnectorStatus + name}, {Key: PrefixTopics + name}}
	for _, ts := range s.tasks(name) {
		muts = append(muts, Mutation{Key: taskKey(name, ts.ID)})
	}
	return s.write(ctx, muts...)
}

// PutWorker writes this worker's member record.
func (s *Statuses) PutWorker(ctx context.Context, w WorkerInfo) error {
	if w.ID == "" {
		return errors.New("kafkastore: worker record without an id")
	}
	return s.write(ctx, Mutation{Key: PrefixWorker + w.ID, Value: w})
}

// DeleteWorker deletes a worker's member record (at clean exit).
func (s *Statuses) DeleteWorker(ctx context.Context, id string) error {
	return s.write(ctx, Mutation{Key: PrefixWorker + id})
}

// Workers returns the member records, sorted by id, reading to the end
// first.
func (s *Statuses) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if err := s.t.ReadToEnd(ctx); err != nil {
		return nil, err
	}
	var out []WorkerInfo
	for _, r := range s.t.Scan(PrefixWorker) {
		var w WorkerInfo
		if err := decodeData(s.t, r, &w); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}
