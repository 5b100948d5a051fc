package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floehq/floe/host/rest"
	"github.com/floehq/floe/host/standalone"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk/client"
)

// runningWorker is a started worker as `floe standalone` drives it.
type runningWorker interface {
	worker.API
	// Metrics is served on /metrics.
	Metrics() *prometheus.Registry
	// Close stops every connector gracefully (each makes its final
	// checkpoint commit) within ctx.
	Close(ctx context.Context) error
}

// startWorker scans the plugins and starts the worker. Tests replace it
// through App.newWorker.
func (a *App) startWorker(ctx context.Context, wc worker.Config, logs *rest.Loggers) (runningWorker, error) {
	if a.newWorker != nil {
		return a.newWorker(ctx, wc, logs)
	}
	reg, err := a.scan(ctx, pluginSource{pluginPath: strings.Join(wc.PluginPath, ","), cacheDir: pluginCacheDir(wc)}, logs.Logger(logRegistry))
	if err != nil {
		// Without plugins no connector can run, but the REST API can still
		// say so; go on and let each connector report what it misses.
		logs.Logger(logCLI).Warn(err.Error())
	}
	plugins := worker.FromRegistry(reg)
	ver, commit := version()
	w, err := worker.New(ctx, wc, worker.Deps{Plugins: plugins, Logger: logs.Logger(logWorker), Version: ver, Commit: commit})
	if err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	client.ReleaseStartupPages()
	return w, nil
}

// loadWorkerConfig reads the worker config file (see [worker.ParseConfig]).
// JSON mistakes are reported here first, with their line and column, or
// the key whose value is not a string.
func loadWorkerConfig(path string) (worker.Config, error) {
	raw, err := loadRawWorkerConfig(path)
	if err != nil {
		return worker.Config{}, err
	}
	return worker.ConfigFromMap(raw, path)
}

// loadRawWorkerConfig reads a worker config file's keys, reporting JSON
// mistakes with their line and column, or the key whose value is not a
// string.
func loadRawWorkerConfig(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("worker config %s: %w (give the path of a worker config, for example configs/worker.json)", path, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("worker config %s: %s", path, jsonProblem(data, err))
	}
	raw := make(map[string]string, len(doc))
	for k, v := range doc {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("worker config %s: %q is %s, not a string: write it in quotes, \"%s\": \"…\"", path, k, string(v), k)
		}
		raw[k] = s
	}
	return raw, nil
}

// pluginCacheDir is where the registry caches what each plugin binary
// declared.
func pluginCacheDir(wc worker.Config) string {
	return filepath.Join(wc.DataDir, "cache")
}

// splitList splits a list setting, dropping blanks.
func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// jsonProblem describes a JSON decoding error with its line and column.
func jsonProblem(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := standalone.LineCol(data, int(syn.Offset)-1)
		return fmt.Sprintf("line %d, column %d: %v (check the JSON there)", line, col, syn)
	case errors.As(err, &typ):
		return fmt.Sprintf("the document is a JSON %s: a config is a JSON object {\"key\": \"value\", …}", typ.Value)
	}
	return err.Error()
}
