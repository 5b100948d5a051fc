package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
)

// Connectors implements [API]. In a cluster the names come from the
// config store read to its end (see [Worker.stored]).
func (w *Worker) Connectors(ctx context.Context) []string {
	if w.deps.Placement != nil {
		if stored, err := w.configs.Connectors(ctx); err == nil {
			names := make([]string, len(stored))
			for i, sc := range stored {
				names[i] = sc.Name
			}
			slices.Sort(names)
			return names
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.conns))
}

// Connector implements [API]. Values of keys declared PASSWORD are Hidden.
func (w *Worker) Connector(ctx context.Context, name string) (ConnectorInfo, error) {
	cfg, target, secrets, err := w.stored(ctx, name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	return ConnectorInfo{Name: name, Config: hideSecrets(cfg, secrets), Tasks: taskIDs(name, cfg, target), Type: connectorType}, nil
}

// stored returns a connector's config, target state and secret keys as
// reads answer them. A worker in a cluster reads the config store to its
// end first and answers from it, not from what it has applied: applying
// a change another worker wrote can wait behind stopping the connector
// (seconds), and a client that wrote through one worker and reads
// through another must see its write. Standalone, the two are the same.
func (w *Worker) stored(ctx context.Context, name string) (map[string]string, store.TargetState, map[string]bool, error) {
	c, err := w.get(name)
	if w.deps.Placement == nil {
		if err != nil {
			return nil, "", nil, err
		}
		cfg, target, _, _, secrets := c.snapshot()
		return cfg, target, secrets, nil
	}
	sc, serr := w.configs.Connector(ctx, name)
	switch {
	case errors.Is(serr, store.ErrNotFound):
		return nil, "", nil, fmt.Errorf("connector %s: %w", name, ErrNotFound)
	case serr != nil:
		return nil, "", nil, fmt.Errorf("connector %s: read the config store: %w", name, serr)
	}
	if sc.Target == "" {
		sc.Target = store.TargetRunning
	}
	if err == nil {
		if cfg, _, _, _, secrets := c.snapshot(); maps.Equal(cfg, sc.Config) {
			return sc.Config, sc.Target, secrets, nil
		}
	}
	return sc.Config, sc.Target, w.secretKeys(sc.Config), nil
}

func hideSecrets(cfg map[string]string, secrets map[string]bool) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	for k := range out {
		if secrets[k] {
			out[k] = Hidden
		}
	}
	return out
}

// tasksMax reads tasks.max (1 when unset or unreadable).
// TasksMax returns a connector config's tasks.max (1 when it does not
// parse: validation reports that).
func TasksMax(cfg map[string]string) int { return tasksMax(cfg) }

func tasksMax(cfg map[string]string) int {
	set, err := runtime.ParseSettings("", withName(cfg, "x"))
	if err != nil || set.Tasks < 1 {
		return 1
	}
	return set.Tasks
}

func withName(cfg map[string]string, name string) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	if out[runtime.KeyName] == "" {
		out[runtime.KeyName] = name
	}
	return out
}

// taskIDs lists the tasks of a connector: none while STOPPED, as Connect.
func taskIDs(name string, cfg map[string]string, target store.TargetState) []TaskID {
	out := []TaskID{}
	if target == store.TargetStopped {
		return out
	}
	for i := range tasksMax(cfg) {
		out = append(out, TaskID{Connector: name, Task: i})
	}
	return out
}

// Tasks implements [API]: each task's config is the connector's (secrets
// Hidden) plus task.id.
func (w *Worker) Tasks(ctx context.Context, name string) ([]TaskInfo, error) {
	cfg, target, secrets, err := w.stored(ctx, name)
	if err != nil {
		return nil, err
	}
	out := []TaskInfo{}
	for _, id := range taskIDs(name, cfg, target) {
		tc := hideSecrets(cfg, secrets)
		tc["task.id"] = fmt.Sprint(id.Task)
		out = append(out, TaskInfo{ID: id, Config: tc})
	}
	return out, nil
}

// CreateConnector implements [API]: the config is validated first, so an
// invalid one leaves nothing stored or started.
func (w *Worker) CreateConnector(ctx context.Context, name string, config map[string]string, initial State) (ConnectorInfo, error) {
	target, err := targetOf(initial)
	if err != nil {
		return ConnectorInfo{}, err
	}
	if err := checkName(name); err != nil {
		return ConnectorInfo{}, err
	}
	cfg, err := configWithName(name, config)
	if err != nil {
		return ConnectorInfo{}, err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ConnectorInfo{}, errors.New("the worker is shutting down")
	}
	if _, ok := w.conns[name]; ok {
		w.mu.Unlock()
		return ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, ErrExists)
	}
	c := newConn(name, target)
	_ = c.op.lock(context.WithoutCancel(ctx)) // c is new: nobody holds it
	defer c.op.unlock()
	w.conns[name] = c // reserved: a concurrent create of the name fails
	w.mu.Unlock()

	v := w.validate(ctx, cfg)
	if !v.ok() {
		w.release(c)
		return ConnectorInfo{}, &ValidationError{Infos: v.infos}
	}
	c.mu.Lock()
	c.config, c.secrets, c.comps = cfg, v.secrets, v.comps
	c.mu.Unlock()
	if err := w.persist(ctx, c, true); err != nil {
		w.release(c)
		return ConnectorInfo{}, err
	}
	if target != store.TargetStopped {
		w.startLocked(c)
	}
	w.logger.Info("connector created", "connector", name, "state", target)
	return w.Connector(ctx, name)
}

// release drops the reservation of a create that failed; c.op is held.
// It marks c deleted first, so that an operation waiting on c.op (a PUT
// of the same name that found the reservation) sees the connector is
// gone instead of configuring and starting one nobody lists.
func (w *Worker) release(c *conn) {
	c.mu.Lock()
	c.deleted = true
	c.mu.Unlock()
	w.mu.Lock()
	if w.conns[c.name] == c {
		delete(w.conns, c.name)
	}
	w.mu.Unlock()
}

// errGone is wrapped (with ErrNotFound) by operations that waited for a
// connector that was deleted, or whose create failed, meanwhile.
var errGone = errors.New("deleted while this request waited")

// PutConnectorConfig implements [API]: a new config restarts the
// connector (its final checkpoint commits first) in its target state. A
// PUT that waited for a create of the same name that then failed, or for
// a delete, creates the connector: the answer always says what runs.
func (w *Worker) PutConnectorConfig(ctx context.Context, name string, config map[string]string) (ConnectorInfo, bool, error) {
	for {
		if _, err := w.get(name); errors.Is(err, ErrNotFound) {
			info, err := w.CreateConnector(ctx, name, config, StateRunning)
			if errors.Is(err, ErrExists) { // created meanwhile: replace it
				continue
			}
			return info, err == nil, err
		}
		info, err := w.reconfigure(ctx, name, func(map[string]string) map[string]string { return maps.Clone(config) })
		if errors.Is(err, errGone) {
			continue
		}
		return info, false, err
	}
}

// PatchConnectorConfig implements [API].
func (w *Worker) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (ConnectorInfo, error) {
	return w.reconfigure(ctx, name, func(old map[string]string) map[string]string {
		cfg := maps.Clone(old)
		for k, v := range patch {
			if v == nil {
				delete(cfg, k)
			} else {
				cfg[k] = *v
			}
		}
		return cfg
	})
}

// reconfigure replaces a connector's config by edit(old config).
func (w *Worker) reconfigure(ctx context.Context, name string, edit func(map[string]string) map[string]string) (ConnectorInfo, error) {
	c, err := w.get(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	if err := c.lockOp(ctx); err != nil {
		return ConnectorInfo{}, err
	}
	defer c.op.unlock()
	if c.deleted {
		return ConnectorInfo{}, fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	old, _, _, _, secrets := c.snapshot()
	cfg := edit(old)
	// A secret sent back as shown keeps its stored value.
	for k, v := range cfg {
		if v == Hidden && secrets[k] {
			if ov, ok := old[k]; ok {
				cfg[k] = ov
			}
		}
	}
	cfg, err = configWithName(name, cfg)
	if err != nil {
		return ConnectorInfo{}, err
	}
	if maps.Equal(cfg, old) && isRunning(c) {
		// The same config (a standalone restart reading its connector
		// file after restoring the connector from the data dir, or a
		// repeated PUT): nothing changes, so nothing restarts, as in
		// Connect. A failed or stopped connector still starts again.
		w.logger.Debug("connector config unchanged; not restarting it", "connector", name)
		return w.Connector(ctx, name)
	}
	v := w.validate(ctx, cfg)
	if !v.ok() {
		return ConnectorInfo{}, &ValidationError{Infos: v.infos}
	}
	if err := w.stopLocked(ctx, c); err != nil {
		w.logger.Warn("connector did not stop cleanly before its reconfiguration", "connector", name, "error", err)
	}
	c.mu.Lock()
	c.config, c.secrets, c.comps, c.failure = cfg, v.secrets, v.comps, ""
	target := c.target
	c.mu.Unlock()
	if err := w.persist(ctx, c, false); err != nil {
		return ConnectorInfo{}, err
	}
	if target != store.TargetStopped {
		w.startLocked(c)
	}
	w.logger.Info("connector reconfigured", "connector", name)
	return w.Connector(ctx, name)
}

// isRunning reports whether c's runtime is up and has not failed.
func isRunning(c *conn) bool {
	_, target, rt, failure, _ := c.snapshot()
	if rt == nil || failure != "" || target == store.TargetStopped {
		return false
	}
	select {
	case <-rt.Done():
		return false
	default:
		return true
	}
}

// DeleteConnector implements [API]: the connector stops (final commit)
// and every trace of it goes from the store and the metrics.
func (w *Worker) DeleteConnector(ctx context.Context, name string) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	if err := c.lockOp(ctx); err != nil {
		return err
	}
	defer c.op.unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	if err := w.stopLocked(ctx, c); err != nil {
		w.logger.Warn("connector did not stop cleanly before its deletion", "connector", name, "error", err)
	}
	err = errors.Join(
		w.configs.DeleteConnector(ctx, name),
		w.statuses.DeleteStatus(ctx, name),
		w.offsets.DeleteOffsets(ctx, name),
	)
	c.mu.Lock()
	c.deleted = true
	c.mu.Unlock()
	w.mu.Lock()
	delete(w.conns, name)
	w.mu.Unlock()
	w.metrics.Forget(name)
	w.logger.Info("connector deleted", "connector", name)
	return err
}

// targetOf maps a requested initial state to a target state.
func targetOf(s State) (store.TargetState, error) {
	switch s {
	case "", StateRunning:
		return store.TargetRunning, nil
	case StatePaused:
		return store.TargetPaused, nil
	case StateStopped:
		return store.TargetStopped, nil
	}
	return "", fmt.Errorf("initial state %q: use RUNNING, PAUSED or STOPPED", s)
}

// checkName rejects names Connect rejects (empty, or control characters),
// "." and ".." (no URL reaches them), and names too long to store.
func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return validationError("name", name, "a connector needs a name")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return validationError("name", name, fmt.Sprintf("connector name %q contains control characters", name))
		}
	}
	if name == "." || name == ".." {
		return validationError("name", name, fmt.Sprintf("connector name %q cannot be used: /connectors/%s is not a path to it", name, name))
	}
	if err := store.CheckName(name); err != nil {
		return validationError("name", name[:min(len(name), 64)]+"…", err.Error())
	}
	return nil
}

// configWithName puts the connector's name in its config; a different
// name there is an error.
func configWithName(name string, config map[string]string) (map[string]string, error) {
	cfg := maps.Clone(config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if n, ok := cfg[runtime.KeyName]; ok && n != name {
		return nil, validationError(runtime.KeyName, n, fmt.Sprintf("the config's name %q differs from the connector's name %q", n, name))
	}
	cfg[runtime.KeyName] = name
	return cfg, nil
}

// validationError is a ValidationError with one error on one key.
func validationError(key, value, msg string) *ValidationError {
	v := value
	return &ValidationError{Infos: ConfigInfos{ErrorCount: 1, Groups: []string{}, Configs: []ConfigInfo{{
		Definition: ConfigDef{Name: key, Type: string(sdk.TypeString), Dependents: []string{}},
		Value:      ConfigValue{Name: key, Value: &v, Errors: []string{msg}, RecommendedValues: []string{}, Visible: true},
	}}}}
}
