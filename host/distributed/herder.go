package distributed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/host/cluster"
	"github.com/floehq/floe/host/control"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/host/store/kafkastore"
	"github.com/floehq/floe/host/worker"
)

// Protocol numbers what workers of a cluster must agree on: the
// assignment's format and the control topic's messages. A worker of
// another protocol joins the group but gets no work, and the leader logs
// why. 2: connectors' tasks spread over workers with one committer each.
// 3: a flushed checkpoint names the partitions that start at their
// source's origin (a committer of 2 would take any new partition).
const Protocol = 3

// tick is how often the herder looks again without being woken: a
// missed wake-up (a member record written just after a read) costs at
// most this.
const tick = 2 * time.Second

// membersTimeout bounds the leader's reading of the group's members.
const membersTimeout = 15 * time.Second

// Runner is the worker as the herder drives it.
type Runner interface {
	// Reconcile reads the config store and makes the connectors this
	// worker runs match it and the placement.
	Reconcile(ctx context.Context) error
	// Refusals names, by connector, why this worker cannot run it (its
	// config does not validate here): the leader places none of it here.
	Refusals() map[string]string
}

// Herder is one worker's part in the cluster: its seat in the membership
// group, the stores on the internal topics, and the loop that places
// connectors (on the leader) and applies the placement (on every worker).
// It implements the worker's placement: [Herder.Runs].
type Herder struct {
	cfg      Config
	log      *slog.Logger
	configs  *kafkastore.Configs
	statuses *kafkastore.Statuses
	offsets  *kafkastore.Offsets
	member   *cluster.Membership
	control  *control.Transport
	wake     chan struct{}
	// info is this worker's member record; Applied grows as the worker
	// applies assignments.
	info kafkastore.WorkerInfo

	mu sync.Mutex
	// assignment is the newest assignment read from the config topic.
	assignment cluster.Assignment
}

// Open creates or checks the internal topics, reads them to their end,
// registers this worker in the status topic and joins the cluster. ctx
// bounds the start.
func Open(ctx context.Context, cfg Config, info kafkastore.WorkerInfo, log *slog.Logger) (*Herder, error) {
	h := &Herder{cfg: cfg, log: log, wake: make(chan struct{}, 1)}
	opts := kafkastore.Options{WorkerID: cfg.Worker.WorkerID, Logger: log, OnApply: func(kafkastore.Record) { h.poke() }}
	var err error
	if h.configs, err = kafkastore.OpenConfigs(ctx, cfg.Stores, opts); err != nil {
		return nil, err
	}
	if h.statuses, err = kafkastore.OpenStatuses(ctx, cfg.Stores, opts); err != nil {
		h.closeStores()
		return nil, err
	}
	if h.offsets, err = kafkastore.OpenOffsets(ctx, cfg.Stores, kafkastore.Options{WorkerID: cfg.Worker.WorkerID, Logger: log}); err != nil {
		h.closeStores()
		return nil, err
	}
	if err := h.checkWorkerID(ctx); err != nil {
		h.closeStores()
		return nil, err
	}
	if h.control, err = control.Open(ctx, cfg.Control, cfg.Worker.WorkerID, log); err != nil {
		h.closeStores()
		return nil, err
	}
	info.ID, info.URL, info.Started = cfg.Worker.WorkerID, cfg.URL, time.Now().UTC()
	info.Protocol = Protocol
	h.info = info
	if err := h.statuses.PutWorker(ctx, info); err != nil {
		h.closeStores()
		return nil, err
	}
	h.member, err = cluster.Join(ctx, cluster.Config{
		Kafka: cfg.Stores.Client, GroupID: cfg.Stores.GroupID, WorkerID: cfg.Worker.WorkerID,
		SessionTimeout: cfg.SessionTimeout, HeartbeatInterval: cfg.HeartbeatInterval, Logger: log,
	})
	if err != nil {
		_ = h.statuses.DeleteWorker(context.WithoutCancel(ctx), cfg.Worker.WorkerID)
		h.closeStores()
		return nil, err
	}
	h.readAssignment()
	return h, nil
}

// checkWorkerID refuses a worker id that a live member with another URL
// holds: two workers with one id would both run its connectors.
func (h *Herder) checkWorkerID(ctx context.Context) error {
	ws, err := h.statuses.Workers(ctx)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.ID == h.cfg.Worker.WorkerID && w.URL != h.cfg.URL {
			h.log.Warn("a worker with this worker.id was registered at another URL; taking the id over (if that worker still runs, give each worker its own worker.id)",
				"worker_id", w.ID, "other_url", w.URL, "url", h.cfg.URL)
		}
	}
	return nil
}

// Stores returns the stores on the internal topics, for the worker.
func (h *Herder) Stores() (store.ConfigStore, store.StatusStore, store.OffsetStore) {
	return h.configs, h.statuses, h.offsets
}

// WorkerID returns this worker's id.
func (h *Herder) WorkerID() string { return h.cfg.Worker.WorkerID }

// Share implements worker.Placement: the tasks of connector name the
// newest assignment places on this worker, and whether its committer is
// here.
func (h *Herder) Share(name string) (worker.ShareSpec, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var spec worker.ShareSpec
	for _, t := range h.assignment.Tasks[h.cfg.Worker.WorkerID] {
		if t.Connector == name {
			spec.Tasks = append(spec.Tasks, t.Task)
		}
	}
	slices.Sort(spec.Tasks)
	if cm, ok := h.assignment.Committers[name]; ok {
		spec.Committer, spec.CommitterEpoch = cm.Worker == h.cfg.Worker.WorkerID, cm.Epoch
	}
	return spec, len(spec.Tasks) > 0 || spec.Committer
}

// Link implements worker.Placement: connector name's control link on the
// control topic.
func (h *Herder) Link(ctx context.Context, name string) (runtime.ControlLink, error) {
	return h.control.Link(ctx, name)
}

// Placed implements worker.Placement: whether the newest assignment
// gives connector name a committer (and so runs it somewhere).
func (h *Herder) Placed(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := ownerOf(h.assignment, name)
	return ok
}

// ownerOf returns the worker that holds connector name's committer: it
// answers for the connector as a whole (its offsets, its restarts).
func ownerOf(a cluster.Assignment, name string) (string, bool) {
	cm, ok := a.Committers[name]
	return cm.Worker, ok && cm.Worker != ""
}

// Owner returns the worker id and REST URL of the worker that holds
// connector name's committer.
func (h *Herder) Owner(ctx context.Context, name string) (id, url string, ok bool) {
	h.mu.Lock()
	owner, placed := ownerOf(h.assignment, name)
	h.mu.Unlock()
	if !placed {
		return "", "", false
	}
	ws, err := h.statuses.Workers(ctx)
	if err != nil {
		return owner, "", false
	}
	for _, w := range ws {
		if w.ID == owner {
			return w.ID, w.URL, true
		}
	}
	return owner, "", false
}

// Leader returns the leader's worker id and REST URL, as the config
// topic's newest leader record names them, and whether this worker is
// it.
func (h *Herder) Leader() (id, url string, self, ok bool) {
	if h.member.Leader() && h.configs.Epoch() != 0 {
		return h.cfg.Worker.WorkerID, h.cfg.URL, true, true
	}
	l, found := h.configs.Leader()
	if !found || l.WorkerID == h.cfg.Worker.WorkerID {
		// No leader yet, or this worker's claim is gone: unknown.
		return "", "", false, false
	}
	return l.WorkerID, l.URL, false, true
}

// Run drives the worker until ctx ends: on every change of the
// membership or of the config topic, the leader places the connectors
// and every worker applies the newest placement. It returns ctx's error,
// or the error that ended the membership.
func (h *Herder) Run(ctx context.Context, r Runner) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	changes := h.member.Changes()
	for {
		if err := h.member.Err(); err != nil {
			return fmt.Errorf("cluster membership of worker %q: %w", h.cfg.Worker.WorkerID, err)
		}
		if h.member.Leader() {
			if err := h.lead(ctx); err != nil && ctx.Err() == nil {
				h.log.Warn("placing connectors failed; trying again", "error", err)
			}
		}
		epoch := h.readAssignment()
		if err := r.Reconcile(ctx); err != nil {
			if ctx.Err() == nil {
				h.log.Warn("applying the placement failed; trying again", "error", err)
			}
		} else if err := h.reportApplied(ctx, epoch, r.Refusals()); err != nil && ctx.Err() == nil {
			h.log.Warn("reporting the applied assignment failed; trying again", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changes:
		case <-h.wake:
		case <-t.C:
		}
	}
}

// lead claims the config topic if this worker has no claim yet, then
// writes a new assignment when the members or the connectors changed.
func (h *Herder) lead(ctx context.Context) error {
	if h.configs.Epoch() == 0 {
		l, err := h.configs.ClaimWrites(ctx, h.cfg.URL)
		if err != nil {
			return fmt.Errorf("claim the config topic: %w", err)
		}
		h.log.Info("leading the cluster", "worker_id", h.cfg.Worker.WorkerID, "leader_epoch", l.Epoch)
	}
	if err := h.configs.ReadToEnd(ctx); err != nil {
		return err
	}
	snap := h.configs.Snapshot()
	prev, err := decodeAssignment(snap.Assignment)
	if err != nil {
		return err
	}
	// Bounded, so that a group coordinator that died does not hold up
	// this worker's own reconcile: the next pass asks again.
	mctx, cancel := context.WithTimeout(ctx, membersTimeout)
	members, err := h.member.Members(mctx)
	cancel()
	if err != nil {
		return err
	}
	infos, err := h.statuses.Workers(ctx)
	if err != nil {
		return err
	}
	byID := map[string]kafkastore.WorkerInfo{}
	for _, w := range infos {
		byID[w.ID] = w
	}
	workers := make([]cluster.Worker, 0, len(members))
	for _, id := range members {
		info := byID[id]
		if info.Protocol != h.info.Protocol {
			h.log.Error("a worker speaks another cluster protocol; it gets no work until it runs this floe version's protocol (upgrade or downgrade it)",
				"worker_id", id, "its_protocol", info.Protocol, "its_version", info.Version, "protocol", h.info.Protocol, "version", h.info.Version)
			continue
		}
		workers = append(workers, cluster.Worker{ID: id, Plugins: pluginNames(info.Plugins), Applied: info.Applied, Refuses: info.Refuses})
	}
	conns := make([]cluster.Connector, 0, len(snap.Connectors))
	for _, name := range slices.Sorted(maps.Keys(snap.Connectors)) {
		c := snap.Connectors[name]
		conns = append(conns, cluster.Connector{Name: name, Tasks: worker.TasksMax(c.Config), Plugins: neededPlugins(c.Config, workers), Target: c.Target})
	}
	res, err := cluster.Assign(prev, workers, conns)
	if err != nil {
		return err
	}
	for _, u := range res.Unplaced {
		h.log.Warn("connector not placed", "connector", u.Connector, "reason", u.Reason)
	}
	if !res.Changed {
		return nil
	}
	data, err := json.Marshal(res.Assignment)
	if err != nil {
		return err
	}
	if _, err := h.configs.WriteAssignment(ctx, kafkastore.Assignment{Epoch: res.Assignment.Epoch, ConfigOffset: snap.Offset, Data: data}); err != nil {
		return fmt.Errorf("write the assignment: %w", err)
	}
	h.log.Info("placed the connectors", "epoch", res.Assignment.Epoch, "workers", members, "placement", placement(res.Assignment))
	return nil
}

// pluginNames lists the names of a worker's plugin components.
func pluginNames(ps []kafkastore.Plugin) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// neededPlugins names the components a connector's config asks for
// (source, connector.class, partitioner, maintenance) that some live
// worker has: the assignor then places the connector only on workers
// that have them all, before any worker had to refuse it. A name no live
// worker has (a Connect class alias, a missing plugin) is left to the
// workers' refusals, which name what is missing.
func neededPlugins(config map[string]string, workers []cluster.Worker) []string {
	var out []string
	for _, key := range []string{runtime.KeySource, runtime.KeyConnectorClass, runtime.KeyPartitioner, runtime.KeyMaintenance} {
		name := strings.TrimSpace(config[key])
		if name == "" || slices.Contains(out, name) {
			continue
		}
		for _, w := range workers {
			if slices.Contains(w.Plugins, name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// readAssignment takes the newest assignment the config store applied
// and returns its epoch.
func (h *Herder) readAssignment() int64 {
	a, err := decodeAssignment(h.configs.Snapshot().Assignment)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.log.Warn("the config topic's assignment does not decode; keeping the previous one", "error", err)
		return h.assignment.Epoch
	}
	if a.Epoch != h.assignment.Epoch {
		// Status records carry the generation they were written under.
		h.statuses.SetGeneration(a.Epoch)
	}
	h.assignment = a
	return a.Epoch
}

// reportApplied tells the leader, through this worker's member record,
// that the worker applied the assignment of epoch (it stopped what that
// assignment took away, so the leader may give it to another worker),
// and which connectors it refuses.
func (h *Herder) reportApplied(ctx context.Context, epoch int64, refuses map[string]string) error {
	if epoch <= h.info.Applied && maps.Equal(refuses, h.info.Refuses) {
		return nil
	}
	info := h.info
	info.Applied, info.Refuses = max(epoch, info.Applied), refuses
	if err := h.statuses.PutWorker(ctx, info); err != nil {
		return err
	}
	h.info = info
	return nil
}

func decodeAssignment(r *kafkastore.Assignment) (cluster.Assignment, error) {
	var a cluster.Assignment
	if r == nil || len(r.Data) == 0 || string(r.Data) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(r.Data, &a); err != nil {
		return cluster.Assignment{}, fmt.Errorf("assignment epoch %d: %w", r.Epoch, err)
	}
	return a, nil
}

// placement renders who runs what, for the log: per worker its tasks
// and committers.
func placement(a cluster.Assignment) map[string]string {
	parts := map[string][]string{}
	for id, ts := range a.Tasks {
		for _, t := range ts {
			parts[id] = append(parts[id], t.String())
		}
	}
	for name, cm := range a.Committers {
		parts[cm.Worker] = append(parts[cm.Worker], name+"(committer)")
	}
	for _, r := range a.Revoking {
		parts[r.To] = append(parts[r.To], r.Task.String()+"(from "+r.From+")")
	}
	out := map[string]string{}
	for id, p := range parts {
		slices.Sort(p)
		out[id] = strings.Join(p, " ")
	}
	return out
}

func (h *Herder) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Close leaves the cluster (the others take this worker's connectors at
// once instead of after the session timeout), removes this worker's
// member record and closes the stores. Stop the worker's connectors
// first. ctx bounds it.
func (h *Herder) Close(ctx context.Context) error {
	err := h.member.Close(ctx)
	if derr := h.statuses.DeleteWorker(ctx, h.cfg.Worker.WorkerID); derr != nil {
		err = errors.Join(err, derr)
	}
	h.closeStores()
	return err
}

func (h *Herder) closeStores() {
	if h.control != nil {
		h.control.Close()
	}
	if h.configs != nil {
		h.configs.Close()
	}
	if h.statuses != nil {
		h.statuses.Close()
	}
	if h.offsets != nil {
		h.offsets.Close()
	}
}

// Route implements rest.Router: reads are answered by any worker, except
// a placed connector's offsets, which its own worker answers from its last
// commit (any other worker would start a sink process to read the table);
// restarts go to the connector's worker, other writes to the leader. While
// no leader is known the answer is 409 (worker.ErrRebalancing), as
// Connect answers during a rebalance.
func (h *Herder) Route(r *http.Request) (string, error) {
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	if name, ok := offsetsOf(r.URL.EscapedPath()); ok && read {
		id, url, placed := h.Owner(r.Context(), name)
		if placed && id != h.cfg.Worker.WorkerID && url != "" {
			return url, nil
		}
		return "", nil // here, not placed, or the owner's URL not known yet: this worker answers
	}
	if read || strings.HasPrefix(r.URL.Path, "/admin/") || strings.HasPrefix(r.URL.Path, "/connector-plugins/") {
		return "", nil
	}
	if name, task, ok := restartOf(r.URL.EscapedPath()); ok {
		id, url, placed := h.Owner(r.Context(), name)
		if task >= 0 {
			id, url, placed = h.taskWorker(r.Context(), name, task)
		}
		switch {
		case !placed && id == "":
			return "", nil // not placed (stopped, or unknown): the worker answers
		case id == h.cfg.Worker.WorkerID:
			return "", nil
		case url == "":
			return "", fmt.Errorf("%w: connector %q runs on worker %q, whose URL is not known yet; try again", worker.ErrRebalancing, name, id)
		}
		return url, nil
	}
	id, url, self, ok := h.Leader()
	switch {
	case self:
		return "", nil
	case !ok:
		return "", fmt.Errorf("%w: the cluster has no leader yet (workers are joining); try again", worker.ErrRebalancing)
	case url == "":
		return "", fmt.Errorf("%w: the leader %q has no URL; try again", worker.ErrRebalancing, id)
	}
	return url, nil
}

// offsetsOf returns the connector of /connectors/{c}/offsets.
func offsetsOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/connectors/")
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 || parts[1] != "offsets" {
		return "", false
	}
	name, err := url.PathUnescape(parts[0])
	return name, err == nil && name != ""
}

// restartOf returns the connector of a restart path, and its task (-1
// for the connector): /connectors/{c}/restart or
// /connectors/{c}/tasks/{t}/restart.
func restartOf(path string) (string, int, bool) {
	rest, ok := strings.CutPrefix(path, "/connectors/")
	if !ok {
		return "", 0, false
	}
	parts := strings.Split(rest, "/")
	task := -1
	switch {
	case len(parts) == 2 && parts[1] == "restart":
	case len(parts) == 4 && parts[1] == "tasks" && parts[3] == "restart":
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 {
			return "", 0, false // the worker answers 404 for the task
		}
		task = n
	default:
		return "", 0, false
	}
	name, err := url.PathUnescape(parts[0])
	return name, task, err == nil && name != ""
}

// taskWorker returns the worker id and REST URL of the worker the newest
// assignment places task of connector name on.
func (h *Herder) taskWorker(ctx context.Context, name string, task int) (id, url string, ok bool) {
	h.mu.Lock()
	for w, ts := range h.assignment.Tasks {
		if slices.Contains(ts, cluster.TaskID{Connector: name, Task: task}) {
			id = w
		}
	}
	h.mu.Unlock()
	if id == "" {
		return "", "", false
	}
	ws, err := h.statuses.Workers(ctx)
	if err != nil {
		return id, "", false
	}
	for _, w := range ws {
		if w.ID == id {
			return w.ID, w.URL, true
		}
	}
	return id, "", false
}

// Peers implements rest.PeerRouter: the REST URLs of the cluster's other
// live members (the group's members, with the URLs their status-topic
// records give), by worker id. A member without a URL yet answers
// worker.ErrRebalancing: it is still joining.
func (h *Herder) Peers(ctx context.Context) (map[string]string, error) {
	members, err := h.member.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the cluster's workers: %w", err)
	}
	infos, err := h.statuses.Workers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the workers' URLs: %w", err)
	}
	urls := make(map[string]string, len(infos))
	for _, w := range infos {
		urls[w.ID] = w.URL
	}
	peers := map[string]string{}
	for _, id := range members {
		if id == h.cfg.Worker.WorkerID {
			continue
		}
		if urls[id] == "" {
			return nil, fmt.Errorf("%w: worker %q has no URL yet (it is joining); try again", worker.ErrRebalancing, id)
		}
		peers[id] = urls[id]
	}
	return peers, nil
}
