package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Local keeps a standalone worker's state in files under one directory.
// It implements [ConfigStore], [StatusStore] and [OffsetStore]. Methods are
// safe for concurrent use; they do not look at ctx, since local file I/O
// cannot be interrupted halfway without risk.
type Local struct {
	dir string
	// mu serialises writers so a read-modify-write cannot interleave and
	// a listing never races a rename.
	mu sync.Mutex
}

var (
	_ ConfigStore = (*Local)(nil)
	_ StatusStore = (*Local)(nil)
	_ OffsetStore = (*Local)(nil)
)

// Sub-folders of the data directory.
const (
	connectorsDir = "connectors"
	statusDir     = "status"
	topicsDir     = "topics"
	offsetsDir    = "offsets"
	overridesDir  = "overrides"
)

// OpenLocal opens (creating if needed) the store under dir, normally the
// worker's data.dir.
func OpenLocal(dir string) (*Local, error) {
	for _, sub := range []string{connectorsDir, statusDir, topicsDir, offsetsDir, overridesDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("store: create %s: %w (check data.dir)", filepath.Join(dir, sub), err)
		}
	}
	return &Local{dir: dir}, nil
}

// Dir returns the directory the store lives in.
func (l *Local) Dir() string { return l.dir }

func (l *Local) path(sub, name, suffix string) string {
	return filepath.Join(l.dir, sub, fileName(name)+suffix)
}

// PutConnector implements [ConfigStore].
func (l *Local) PutConnector(_ context.Context, c Connector) error {
	if c.Name == "" {
		return errors.New("store: connector without a name")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return writeJSON(l.path(connectorsDir, c.Name, ".json"), c)
}

// Connector implements [ConfigStore].
func (l *Local) Connector(_ context.Context, name string) (Connector, error) {
	var c Connector
	err := readJSON(l.path(connectorsDir, name, ".json"), &c)
	return c, err
}

// Connectors implements [ConfigStore].
func (l *Local) Connectors(_ context.Context) ([]Connector, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dir := filepath.Join(l.dir, connectorsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", dir, err)
	}
	var out []Connector
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		var c Connector
		path := filepath.Join(dir, e.Name())
		if err := readJSON(path, &c); err != nil {
			return nil, err
		}
		if c.Name == "" {
			return nil, fmt.Errorf("store: %s is corrupt (no connector name); fix or remove the file", path)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Connector) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteConnector implements [ConfigStore].
func (l *Local) DeleteConnector(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return removeFile(l.path(connectorsDir, name, ".json"))
}

// PutStatus implements [StatusStore].
func (l *Local) PutStatus(_ context.Context, name string, s Status) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return writeJSON(l.path(statusDir, name, ".json"), s)
}

// Status implements [StatusStore].
func (l *Local) Status(_ context.Context, name string) (Status, error) {
	var s Status
	err := readJSON(l.path(statusDir, name, ".json"), &s)
	return s, err
}

// PutTopics implements [StatusStore].
func (l *Local) PutTopics(_ context.Context, name string, topics []string) error {
	t := slices.Clone(topics)
	slices.Sort(t)
	t = slices.Compact(t)
	if t == nil {
		t = []string{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return writeJSON(l.path(topicsDir, name, ".json"), t)
}

// Topics implements [StatusStore].
func (l *Local) Topics(_ context.Context, name string) ([]string, error) {
	var t []string
	err := readJSON(l.path(topicsDir, name, ".json"), &t)
	if errors.Is(err, ErrNotFound) {
		return []string{}, nil
	}
	return t, err
}

// DeleteStatus implements [StatusStore].
func (l *Local) DeleteStatus(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(
		removeFile(l.path(statusDir, name, ".json")),
		removeFile(l.path(topicsDir, name, ".json")))
}

// PutCommitted implements [OffsetStore].
func (l *Local) PutCommitted(_ context.Context, name string, c Committed) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return writeJSON(l.path(offsetsDir, name, ".json"), c)
}

// Committed implements [OffsetStore].
func (l *Local) Committed(_ context.Context, name string) (Committed, error) {
	var c Committed
	err := readJSON(l.path(offsetsDir, name, ".json"), &c)
	return c, err
}

// PutOverride implements [OffsetStore].
func (l *Local) PutOverride(_ context.Context, name string, o Override) error {
	if o.Positions == nil {
		o.Positions = map[string]int64{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return writeJSON(l.path(overridesDir, name, ".json"), o)
}

// Override implements [OffsetStore].
func (l *Local) Override(_ context.Context, name string) (Override, error) {
	var o Override
	err := readJSON(l.path(overridesDir, name, ".json"), &o)
	return o, err
}

// DeleteOverride implements [OffsetStore].
func (l *Local) DeleteOverride(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return removeFile(l.path(overridesDir, name, ".json"))
}

// DeleteOffsets implements [OffsetStore].
func (l *Local) DeleteOffsets(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(
		removeFile(l.path(offsetsDir, name, ".json")),
		removeFile(l.path(overridesDir, name, ".json")))
}
