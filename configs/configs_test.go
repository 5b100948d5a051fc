// Package configs holds floe's example worker and connector configs; its
// test keeps every one of them loadable and valid against the specs of the
// plugins built from this tree.
package configs

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/host/distributed"
	"github.com/floehq/floe/host/registry"
	"github.com/floehq/floe/host/standalone"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk"
)

// exampleFiles lists the JSON files of this folder.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no *.json in configs/")
	}
	return files
}

// isWorkerConfig tells worker configs from connector configs by name.
func isWorkerConfig(file string) bool {
	return strings.HasSuffix(file, "worker.json")
}

// TestExamplesParse checks that every worker file parses as a worker
// config and every connector file is Connect-shaped ({"name", "config":
// {string: string}}) with the keys every connector needs.
func TestExamplesParse(t *testing.T) {
	for _, file := range exampleFiles(t) {
		t.Run(file, func(t *testing.T) {
			if isWorkerConfig(file) && strings.Contains(file, "distributed") {
				raw := map[string]string{}
				data, err := os.ReadFile(file)
				if err == nil {
					err = json.Unmarshal(data, &raw)
				}
				if err == nil {
					_, err = distributed.ParseConfig(raw, file)
				}
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if isWorkerConfig(file) {
				if _, err := worker.LoadConfig(file); err != nil {
					t.Fatal(err)
				}
				return
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var shape struct {
				Name   string            `json:"name"`
				Config map[string]string `json:"config"`
			}
			dec := json.NewDecoder(strings.NewReader(string(data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&shape); err != nil {
				t.Fatalf("%s is not Connect-shaped JSON: %v", file, err)
			}
			if shape.Name == "" || len(shape.Config) == 0 {
				t.Fatalf("%s: want {\"name\": …, \"config\": {…}}", file)
			}
			c, err := standalone.LoadConnector(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"connector.class", "source", "tasks.max"} {
				if c.Config[key] == "" {
					t.Errorf("%s: %q is missing", file, key)
				}
			}
		})
	}
}

// buildPlugins returns a folder holding every plugin of the tree: the
// plugins of $FLOE_BIN_DIR (set by e2e/run-tests after `make build`), or
// else a temporary folder it builds plugins/*/cmd/* into.
func buildPlugins(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("FLOE_BIN_DIR"); bin != "" {
		if dir := filepath.Join(bin, "plugins"); isDir(dir) {
			return dir
		}
	}
	cmds, err := filepath.Glob("../plugins/*/cmd/floe-plugin-*")
	if err != nil || len(cmds) == 0 {
		t.Fatalf("no plugin commands under plugins/*/cmd: %v", err)
	}
	dir := t.TempDir()
	for _, cmd := range cmds {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(cmd)), "./"+filepath.ToSlash(cmd)).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", cmd, err, out)
		}
	}
	return dir
}

// TestExamplesValidate validates every connector file against the specs
// of the built plugins, with the worker's own validation (the REST API's
// config/validate, probes included: the catalog is opened, the bucket
// asked for), against the services of e2e/services/up. A file naming a
// plugin this tree does not build yet, or a service that is not running,
// is skipped, saying which (failed with FLOE_REQUIRE_SERVICES=1).
func TestExamplesValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every plugin; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pluginDir := buildPlugins(t)
	env := harness.LoadEnv()
	reg, problems := registry.Scan(ctx, []string{pluginDir}, "", nil)
	for _, p := range problems {
		t.Errorf("plugin problem: %v", p)
	}
	w, err := worker.New(ctx, worker.Config{DataDir: t.TempDir(), PluginPath: []string{pluginDir}}, worker.Deps{Plugins: worker.FromRegistry(reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close(context.Background()) }()

	for _, file := range exampleFiles(t) {
		if isWorkerConfig(file) {
			continue
		}
		t.Run(file, func(t *testing.T) {
			c, err := standalone.LoadConnector(file)
			if err != nil {
				t.Fatal(err)
			}
			for kind, key := range map[sdk.Kind]string{sdk.KindSource: "source", sdk.KindSink: "connector.class", sdk.KindPartitioner: "partitioner", sdk.KindMaintenance: "maintenance"} {
				name := c.Config[key]
				if name == "" {
					continue
				}
				if _, err := reg.Lookup(kind, name); err != nil {
					t.Skipf("%s names %s plugin %q, which this tree does not build yet (%v)", file, kind, name, err)
				}
			}
			// The examples name services at conventional addresses;
			// validation reaches them (the catalog, the bucket, the
			// registry), so they are pointed at the running ones.
			config, missing := harness.LocalizeExample(env, c.Config)
			if len(missing) > 0 {
				if env.RequireServices {
					t.Fatalf("%s needs %s, and %s=1", file, strings.Join(missing, ", "), harness.RequireServicesEnv)
				}
				t.Skipf("%s needs %s (run e2e/services/up and source its env file)", file, strings.Join(missing, ", "))
			}
			infos, err := w.Validate(ctx, config["connector.class"], config)
			if err != nil {
				t.Fatal(err)
			}
			for _, ci := range infos.Configs {
				for _, e := range ci.Value.Errors {
					t.Errorf("%s: %s: %s", file, ci.Value.Name, e)
				}
			}
		})
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
