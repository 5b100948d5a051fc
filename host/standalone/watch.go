package standalone

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/floehq/floe/host/worker"
)

// DefaultDebounce is how long a file must stay unchanged before it is
// applied: editors write a file in several steps (truncate, write,
// rename a temporary file over it).
const DefaultDebounce = 300 * time.Millisecond

// Target is what the watched folder drives: the connector operations of
// [worker.API].
type Target interface {
	CreateConnector(ctx context.Context, name string, config map[string]string, initial worker.State) (worker.ConnectorInfo, error)
	PutConnectorConfig(ctx context.Context, name string, config map[string]string) (worker.ConnectorInfo, bool, error)
	DeleteConnector(ctx context.Context, name string) error
}

// Options tunes [Watch].
type Options struct {
	// Debounce overrides [DefaultDebounce].
	Debounce time.Duration
	// Logger receives what the folder did and every file it could not
	// apply. Nil discards.
	Logger *slog.Logger
	// Applied, when set, is called after each file event was handled,
	// with the file and the error (nil when applied). Tests use it.
	Applied func(file string, err error)
	// Scanned, when set, is called once the files present at start were
	// applied, so a caller can wait for them.
	Scanned func()
}

// Watch keeps a folder of connector files and the worker in step until ctx
// ends: at start and whenever a *.json file appears or changes, its
// connector is created (in the file's initial_state) or its config
// replaced (the worker restarts it); when the file goes away, its
// connector is deleted. A file that does not parse or validate is logged
// with its name (and the line and column of a JSON error) and the
// connector keeps its previous config. Hidden files, editor backups and
// other extensions are ignored. Two files naming the same connector: the
// second is refused.
//
// Watch creates dir if missing. It returns nil when ctx ends, or an error
// when the folder cannot be watched at all.
func Watch(ctx context.Context, dir string, target Target, opts Options) error {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("watched config folder %s: %w (set \"config.dir\" in the worker config to a folder floe can create)", dir, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watched config folder %s: %w", dir, err)
	}
	defer func() {
		if err := fw.Close(); err != nil {
			opts.Logger.Warn("watched config folder: closing the watcher", "dir", dir, "error", err)
		}
	}()
	if err := fw.Add(dir); err != nil {
		return fmt.Errorf("watched config folder %s: %w (is it a folder floe may read?)", dir, err)
	}
	w := &watcher{dir: dir, target: target, opts: opts, log: opts.Logger,
		files: map[string]applied{}, due: make(chan string, 64), timers: map[string]*time.Timer{}}
	defer w.stopTimers()

	w.log.Info("watching connector config folder", "dir", dir)
	w.rescan(ctx)
	if opts.Scanned != nil {
		opts.Scanned()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if w.relevant(ev.Name) {
				w.schedule(ev.Name)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("watched config folder: events were lost; rereading every file", "dir", dir)
				w.rescan(ctx)
				continue
			}
			w.log.Warn("watched config folder", "dir", dir, "error", err)
		case file := <-w.due:
			delete(w.timers, file)
			w.handle(ctx, file)
		}
	}
}

// applied is what the folder last applied from one file.
type applied struct {
	name   string
	config map[string]string
}

type watcher struct {
	dir    string
	target Target
	opts   Options
	log    *slog.Logger

	files  map[string]applied // file path → its connector
	due    chan string
	timers map[string]*time.Timer
}

// relevant reports whether a path is a connector file of the folder.
func (w *watcher) relevant(path string) bool {
	base := filepath.Base(path)
	return filepath.Dir(path) == filepath.Clean(w.dir) && strings.HasSuffix(base, ".json") &&
		!strings.HasPrefix(base, ".") && !strings.HasPrefix(base, "#")
}

// schedule (re)starts a file's debounce timer.
func (w *watcher) schedule(file string) {
	if t, ok := w.timers[file]; ok {
		t.Reset(w.opts.Debounce)
		return
	}
	w.timers[file] = time.AfterFunc(w.opts.Debounce, func() { w.due <- file })
}

func (w *watcher) stopTimers() {
	for _, t := range w.timers {
		t.Stop()
	}
}

// rescan applies every file present and deletes the connectors of files
// that vanished.
func (w *watcher) rescan(ctx context.Context) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		w.log.Error("watched config folder: cannot list it", "dir", w.dir, "error", err)
		return
	}
	present := map[string]bool{}
	for _, e := range entries {
		p := filepath.Join(w.dir, e.Name())
		if e.Type().IsRegular() && w.relevant(p) {
			present[p] = true
			w.handle(ctx, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(w.files)) {
		if !present[p] {
			w.handle(ctx, p)
		}
	}
}

// handle brings the worker in step with one file.
func (w *watcher) handle(ctx context.Context, file string) {
	err := w.apply(ctx, file)
	if err != nil {
		w.log.Error("connector file not applied; the connector keeps its previous config", "file", file, "error", err)
	}
	if w.opts.Applied != nil {
		w.opts.Applied(file, err)
	}
}

func (w *watcher) apply(ctx context.Context, file string) error {
	prev, known := w.files[file]
	c, err := LoadConnector(file)
	if errors.Is(err, fs.ErrNotExist) {
		if !known {
			return nil
		}
		delete(w.files, file)
		if err := w.target.DeleteConnector(ctx, prev.name); err != nil && !errors.Is(err, worker.ErrNotFound) {
			return fmt.Errorf("delete connector %s after its file went away: %w", prev.name, err)
		}
		w.log.Info("connector deleted: its file was removed", "connector", prev.name, "file", file)
		return nil
	}
	if err != nil {
		return err
	}
	for other, a := range w.files {
		if other != file && a.name == c.Name {
			return fmt.Errorf("connector %s is already defined by %s: give this file another \"name\" or remove one of them", c.Name, other)
		}
	}
	if known && prev.name == c.Name && maps.Equal(prev.config, c.Config) {
		return nil // touched, not changed
	}
	if known && prev.name != c.Name {
		if err := w.target.DeleteConnector(ctx, prev.name); err != nil && !errors.Is(err, worker.ErrNotFound) {
			return fmt.Errorf("rename connector %s to %s: delete the old one: %w", prev.name, c.Name, err)
		}
		delete(w.files, file)
		w.log.Info("connector deleted: its file now names another connector", "connector", prev.name, "file", file, "new_name", c.Name)
	}
	if !known || prev.name != c.Name {
		_, err := w.target.CreateConnector(ctx, c.Name, c.Config, c.InitialState)
		if err == nil {
			w.files[file] = applied{name: c.Name, config: c.Config}
			w.log.Info("connector created from file", "connector", c.Name, "file", file, "state", c.InitialState)
			return nil
		}
		if !errors.Is(err, worker.ErrExists) {
			return fmt.Errorf("create connector %s: %w", c.Name, err)
		}
		// It exists already (from the command line or the REST API): the
		// file takes it over below.
	}
	if _, _, err := w.target.PutConnectorConfig(ctx, c.Name, c.Config); err != nil {
		return fmt.Errorf("update connector %s: %w", c.Name, err)
	}
	w.files[file] = applied{name: c.Name, config: c.Config}
	w.log.Info("connector config updated from file; the connector restarts", "connector", c.Name, "file", file)
	return nil
}
