package runtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/host/registry"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// The integration test runs the real plugin binaries, built from this
// module, over real go-plugin gRPC: datagen → hash partitioner → Iceberg
// (embedded SQLite catalog and local warehouse under the data dir).

// pluginPackages are the binaries the test needs.
var pluginPackages = []string{
	"plugins/datagen/cmd/floe-plugin-datagen",
	"plugins/partitioners/cmd/floe-plugin-partitioners",
	"plugins/iceberg/cmd/floe-plugin-iceberg",
	"host/runtime/testdata/keyprobe", // built as floe-plugin-keyprobe
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  string
)

// buildPlugins builds the plugin binaries once per test binary into a
// temporary folder; it skips the test when a package is missing.
func buildPlugins(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go tool is not on PATH: cannot build the plugin binaries")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pluginPackages {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Skipf("plugin package %s does not exist yet: %v", p, err)
		}
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "floe-runtime-plugins-")
		if err != nil {
			buildErr = err.Error()
			return
		}
		buildDir = dir
		for _, p := range pluginPackages {
			bin := registry.Prefix + strings.TrimPrefix(filepath.Base(p), registry.Prefix)
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, bin), "./"+p)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = "go build ./" + p + ": " + err.Error() + "\n" + string(out)
				return
			}
		}
	})
	if buildErr != "" {
		t.Fatalf("building the plugins: %s", buildErr)
	}
	return buildDir
}

// realPlugins builds the plugin binaries and scans them, for a test that
// runs them; -short skips it.
func realPlugins(t *testing.T) *registry.Registry {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the test that builds and runs the real plugins")
	}
	dir := buildPlugins(t)
	reg, problems := registry.Scan(t.Context(), []string{dir}, "", nil)
	if len(problems) > 0 {
		t.Fatalf("plugin scan: %v", problems)
	}
	return reg
}

// registryPlugins adapts the registry for the test (the worker has the
// same adapter, FromRegistry).
type registryPlugins struct{ r *registry.Registry }

func (p registryPlugins) Start(ctx context.Context, kind sdk.Kind, name string, opts client.StartOptions) (Process, error) {
	e, err := p.r.Lookup(kind, name)
	if err != nil {
		return nil, err
	}
	proc, err := p.r.Start(ctx, e, opts)
	if err != nil {
		return nil, err
	}
	return WrapProcess(proc), nil
}

// lookupComponents finds each kind's component in the registry.
func lookupComponents(t *testing.T, reg *registry.Registry, names map[sdk.Kind]string) map[sdk.Kind]client.Component {
	t.Helper()
	comps := map[sdk.Kind]client.Component{}
	for kind, name := range names {
		e, err := reg.Lookup(kind, name)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		comps[kind] = e.Component
	}
	return comps
}

func TestIntegrationDatagenToIceberg(t *testing.T) {
	reg := realPlugins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	comps := lookupComponents(t, reg, map[sdk.Kind]string{sdk.KindSource: "datagen", sdk.KindPartitioner: "hash", sdk.KindSink: "iceberg"})
	dataDir := t.TempDir()
	st, err := store.OpenLocal(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	const total = 20000
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("FLOE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts := Options{
		Name: "it-orders",
		Config: map[string]string{
			"name": "it-orders", "connector.class": "iceberg", "source": "datagen", "partitioner": "hash",
			"tasks.max": "2", "commit.interval.ms": "1000", "datagen.count": "20000", "datagen.partitions": "4",
			"iceberg.tables": "demo.orders",
		},
		Components: comps, DataDir: dataDir, Plugins: registryPlugins{reg}, Offsets: st, Statuses: st,
		Logger: logger,
	}

	run := func() Status {
		c, err := Start(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
		for !c.Status().Progress.EndOfInput {
			select {
			case <-c.Done():
				t.Fatalf("connector ended: %v (status %+v)", c.Err(), c.Status())
			case <-ctx.Done():
				t.Fatalf("no end of input: %+v", c.Status())
			case <-time.After(50 * time.Millisecond):
			}
		}
		return c.Status()
	}

	first := run()
	if first.Progress.RecordsOut != total || first.Progress.Commits == 0 {
		t.Fatalf("first run: %+v", first.Progress)
	}
	for i, ts := range first.Tasks {
		if ts.State != StateRunning {
			t.Fatalf("task %d: %s %s", i, ts.State, ts.Trace)
		}
	}
	fr, err := ReadFrontier(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, n := range fr.Positions {
		sum += n
	}
	if sum != total || len(fr.Positions) != 4 || fr.Checkpoint != first.Progress.Checkpoint {
		t.Fatalf("frontier %+v (sum %d), want %d over 4 partitions at checkpoint %d", fr, sum, total, first.Progress.Checkpoint)
	}
	cm, err := st.Committed(ctx, "it-orders")
	if err != nil || cm.Checkpoint != fr.Checkpoint {
		t.Fatalf("stored offsets %+v %v", cm, err)
	}

	// A second run resumes at the frontier: datagen has nothing left, and
	// nothing is written twice.
	second := run()
	if second.Progress.RecordsOut != 0 {
		t.Fatalf("second run wrote %d records again", second.Progress.RecordsOut)
	}
	fr2, err := ReadFrontier(ctx, opts)
	if err != nil || fr2.Checkpoint != fr.Checkpoint {
		t.Fatalf("frontier after the second run %+v %v", fr2, err)
	}
}

// TestIntegrationSinkKilled kills the Iceberg plugin process (SIGKILL) in
// the middle of a run: the sink restarts, the pipeline rewinds to the
// table's frontier, and every record lands exactly once.
func TestIntegrationSinkKilled(t *testing.T) {
	reg := realPlugins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	st, _ := store.OpenLocal(dataDir)
	const total = 40000
	opts := Options{
		Name: "it-kill",
		Config: map[string]string{
			"name": "it-kill", "connector.class": "iceberg", "source": "datagen",
			"tasks.max": "2", "commit.interval.ms": "200", "datagen.count": "40000", "datagen.rate": "20000",
			"datagen.partitions": "3", "iceberg.tables": "demo.kill", "plugin.restart.backoff.ms": "100",
		},
		Components: lookupComponents(t, reg, map[sdk.Kind]string{sdk.KindSource: "datagen", sdk.KindPartitioner: "hash", sdk.KindSink: "iceberg"}),
		DataDir:    dataDir, Plugins: registryPlugins{reg}, Offsets: st, Statuses: st,
	}
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop(ctx) }()
	for c.Status().Progress.Commits < 3 {
		if ctx.Err() != nil {
			t.Fatalf("no commits: %+v", c.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	sink := c.roles[sdk.KindSink]
	sink.mu.Lock()
	proc := sink.proc.(clientProcess).p
	sink.mu.Unlock()
	if err := syscall.Kill(proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for !c.Status().Progress.EndOfInput {
		select {
		case <-c.Done():
			t.Fatalf("connector ended: %v %+v", c.Err(), c.Status())
		case <-ctx.Done():
			t.Fatalf("no end of input: %+v", c.Status())
		case <-time.After(50 * time.Millisecond):
		}
	}
	p := c.Status().Progress
	if p.PluginRestarts < 1 {
		t.Fatalf("the sink was not restarted: %+v", p)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The sink reports the records of each commit: their sum is the
	// table's row count (a replayed record committed twice would show).
	if p.RecordsOut != total {
		t.Fatalf("records committed = %d, want %d (progress %+v)", p.RecordsOut, total, p)
	}
	fr, err := ReadFrontier(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, n := range fr.Positions {
		sum += n
	}
	if sum != total {
		t.Fatalf("frontier %+v sums to %d", fr.Positions, sum)
	}
}

// TestPluginsReceiveOnlyTheirKeys runs a connector of keyprobe components
// (real plugin processes, which record the keys they were given) with a
// config holding every component's keys, secrets among them: each plugin
// must receive exactly the keys its spec declares, plus floe.data.dir
// (and a source the commit interval, floe.commit.interval.ms);
// the source's kafka.sasl.password reaches neither the partitioner nor
// the sink, the sink's catalog password not the source, and the host's
// keys only the component that names one exactly.
func TestPluginsReceiveOnlyTheirKeys(t *testing.T) {
	reg := realPlugins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	st, err := store.OpenLocal(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Name: "keys",
		Config: map[string]string{
			"name": "keys", "connector.class": "probe-sink", "source": "probe-source",
			"partitioner": "probe-partitioner", "maintenance": "probe-maintenance",
			"tasks.max": "1", "commit.interval.ms": "60000",
			"errors.tolerance": "all", "errors.log.enable": "true",
			"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.sasl.password": "source-secret", "kafka.client.id": "k",
			"probe.fields":   "id",
			"iceberg.tables": "a.b", "iceberg.catalog.jdbc.password": "catalog-secret", "iceberg.catalog.uri": "postgres://x/y",
		},
		Components: lookupComponents(t, reg, map[sdk.Kind]string{
			sdk.KindSource: "probe-source", sdk.KindPartitioner: "probe-partitioner",
			sdk.KindSink: "probe-sink", sdk.KindMaintenance: "probe-maintenance",
		}),
		DataDir: dataDir, Plugins: registryPlugins{reg}, Offsets: st, Statuses: st,
	}
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop(ctx) }()

	want := map[string][]string{
		"source":      {"floe.commit.interval.ms", "floe.data.dir", "kafka.bootstrap.servers", "kafka.client.id", "kafka.sasl.password"},
		"partitioner": {"floe.data.dir", "probe.fields"},
		"sink":        {"floe.data.dir", "iceberg.catalog.jdbc.password", "iceberg.catalog.uri", "iceberg.tables"},
		"maintenance": {"commit.interval.ms", "floe.data.dir"},
	}
	for kind, keys := range want {
		// The SDK runs the spec's check before Open: both see the same.
		for _, file := range []string{kind, "validate-" + kind} {
			got := waitKeys(t, ctx, filepath.Join(dataDir, "keys", file+".json"), c)
			if !slices.Equal(got, keys) {
				t.Errorf("%s received %v, want %v", file, got, keys)
			}
		}
	}
}

// waitKeys waits for a keyprobe record and returns its keys.
func waitKeys(t *testing.T, ctx context.Context, path string, c *Connector) []string {
	t.Helper()
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var keys []string
			if err := json.Unmarshal(b, &keys); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return keys
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never written: %v; connector status %+v", path, err, c.Status())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
