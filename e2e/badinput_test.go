package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestBadInput feeds floe the mistakes users make and checks that each is
// refused with an error that names the file, line and column or the key
// (with a "did you mean" for typos), through the CLI (floe validate,
// floe standalone, floe plugins) and through the REST API (400 with the
// per-key errors), and that nothing is left half-started: no connector
// listed after a refused create, no plugin process running for it.
// Broken plugin binaries in plugin.path (not executable, crashing at
// start, speaking another protocol version) are reported and skipped
// while the good plugins keep working.
func TestBadInput(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 8*time.Minute)
	dir := t.TempDir()
	pluginDir := brokenPluginDir(t, env)

	worker := filepath.Join(dir, "worker.json")
	writeFile(t, worker, fmt.Sprintf(`{"listeners": "http://127.0.0.1:0", "plugin.path": %q, "data.dir": %q}`, pluginDir, filepath.Join(dir, "data")))
	good := map[string]string{
		"connector.class": "iceberg",
		"source":          "datagen",
		"datagen.count":   "1000",
		"iceberg.tables":  "bad.input",
	}
	// run runs a floe command in dir; a standalone that is wrongly
	// accepted would run forever, so the timeout is short.
	run := func(args ...string) harness.CLIResult {
		t.Helper()
		return harness.RunFloe(t, env, dir, 2*time.Minute, args...)
	}
	// expectCLIError checks a non-zero exit whose output has every want.
	expectCLIError := func(t *testing.T, res harness.CLIResult, want ...string) {
		t.Helper()
		if res.Code == 0 {
			t.Errorf("floe %s exited 0, want an error\n%s", strings.Join(res.Args, " "), res.Output())
			return
		}
		for _, w := range want {
			if !strings.Contains(res.Output(), w) {
				t.Errorf("floe %s: output does not mention %q:\n%s", strings.Join(res.Args, " "), w, res.Output())
			}
		}
	}
	connectorFile := func(name string, config map[string]string) string {
		path := filepath.Join(dir, name+".json")
		harness.WriteConnectorFile(t, path, harness.Connector{Name: name, Config: config})
		return path
	}

	t.Run("malformed connector JSON names file, line and column", func(t *testing.T) {
		bad := filepath.Join(dir, "syntax.json")
		writeFile(t, bad, "{\n  \"name\": \"syntax\",\n  \"config\": {\n    \"connector.class\": \"iceberg\"\n    \"source\": \"datagen\"\n  }\n}\n")
		for _, cmd := range []string{"validate", "standalone"} {
			expectCLIError(t, run(cmd, worker, bad), "syntax.json", "line 5, column 5")
		}
	})

	t.Run("malformed worker JSON names file, line and column", func(t *testing.T) {
		bad := filepath.Join(dir, "worker-syntax.json")
		writeFile(t, bad, "{\n  \"listeners\": \"http://127.0.0.1:0\"\n  \"data.dir\": \"x\"\n}\n")
		expectCLIError(t, run("standalone", bad), "worker-syntax.json", "line 3")
	})

	t.Run("mistyped worker key", func(t *testing.T) {
		bad := filepath.Join(dir, "worker-typo.json")
		writeFile(t, bad, fmt.Sprintf(`{"listeners": "http://127.0.0.1:0", "plugin.paht": %q}`, pluginDir))
		expectCLIError(t, run("standalone", bad), "worker-typo.json", `"plugin.paht"`, `did you mean "plugin.path"`)
	})

	t.Run("unknown source plugin", func(t *testing.T) {
		cfg := withConfig(harness.Connector{Config: good}, map[string]string{"source": "no-such-source"}).Config
		file := connectorFile("unknown-plugin", cfg)
		for _, cmd := range []string{"validate", "standalone"} {
			expectCLIError(t, run(cmd, worker, file), "source", "no-such-source")
		}
	})

	t.Run("mistyped connector key", func(t *testing.T) {
		cfg := withConfig(harness.Connector{Config: good}, map[string]string{"iceberg.tables": "", "iceberg.tabels": "bad.input"}).Config
		file := connectorFile("typo", cfg)
		for _, cmd := range []string{"validate", "standalone"} {
			expectCLIError(t, run(cmd, worker, file), "iceberg.tabels", `did you mean "iceberg.tables"`)
		}
	})

	t.Run("missing required key", func(t *testing.T) {
		kafka := connectorFile("no-bootstrap", map[string]string{
			"connector.class": "iceberg", "source": "kafka", "topics": "t", "iceberg.tables": "bad.input",
		})
		if env.PluginBin("kafka") != "" && fileExists(env.PluginBin("kafka")) {
			kafkaWorker := filepath.Join(dir, "worker-kafka.json")
			writeFile(t, kafkaWorker, fmt.Sprintf(`{"listeners": "http://127.0.0.1:0", "plugin.path": %q, "data.dir": %q}`, env.PluginDir(), filepath.Join(dir, "data-kafka")))
			expectCLIError(t, run("validate", kafkaWorker, kafka), "kafka.bootstrap.servers")
		}
		noTables := connectorFile("no-tables", withConfig(harness.Connector{Config: good}, map[string]string{"iceberg.tables": ""}).Config)
		expectCLIError(t, run("validate", worker, noTables), "iceberg.tables")
	})

	t.Run("broken plugin binaries are reported and skipped", func(t *testing.T) {
		res := run("plugins", "--plugin-path", pluginDir)
		if res.Code != 0 {
			t.Errorf("floe plugins exited %d with broken binaries beside good ones, want 0 (report and skip)\n%s", res.Code, res.Output())
		}
		for _, want := range []string{"floe-plugin-noexec", "not executable", "floe-plugin-crash", "cannot load libfoo.so", "floe-plugin-future", "v3"} {
			if !strings.Contains(res.Output(), want) {
				t.Errorf("floe plugins does not mention %q:\n%s", want, res.Output())
			}
		}
		if !strings.Contains(res.Stdout, "datagen") || !strings.Contains(res.Stdout, "iceberg") {
			t.Errorf("floe plugins does not list the good plugins:\n%s", res.Stdout)
		}
	})

	t.Run("REST refuses bad connectors and starts nothing", func(t *testing.T) {
		f := harness.StartFloe(t, env, harness.Options{Worker: map[string]string{"plugin.path": pluginDir}})
		for _, want := range []string{"floe-plugin-noexec", "floe-plugin-crash", "floe-plugin-future"} {
			if !strings.Contains(f.Log(), want) {
				t.Errorf("floe standalone's log does not report the broken plugin %s", want)
			}
		}
		cases := []struct {
			name, key, mention string
			config             map[string]string
		}{
			{"unknown-source", "source", "no-such-source", map[string]string{"source": "no-such-source"}},
			{"future-source", "source", "future", map[string]string{"source": "future"}},
			{"mistyped-key", "iceberg.tabels", `did you mean "iceberg.tables"`, map[string]string{"iceberg.tables": "", "iceberg.tabels": "bad.input"}},
			{"bad-value", "datagen.rate", "datagen.rate", map[string]string{"datagen.rate": "fast"}},
			{"missing-tables", "iceberg.tables", "iceberg.tables", map[string]string{"iceberg.tables": ""}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				conn := withConfig(harness.Connector{Name: c.name, Config: good}, c.config)
				_, err := f.API.CreateConnector(ctx, conn)
				if err == nil {
					t.Errorf("POST /connectors accepted %s (%s) with 201; want 400 naming %s", c.name, c.config, c.key)
					if err := f.API.DeleteConnector(ctx, c.name); err != nil {
						t.Error(err)
					}
				} else {
					expectError(t, err, http.StatusBadRequest, c.mention)
					if !strings.Contains(err.Error(), c.key) {
						t.Errorf("the 400 does not name the key %s: %v", c.key, err)
					}
				}
				infos, verr := f.API.Validate(ctx, "iceberg", withConfig(conn, map[string]string{"name": c.name}).Config)
				if verr != nil {
					t.Fatal(verr)
				}
				if errs := infos.Errors(); len(errs[c.key]) == 0 {
					t.Errorf("validate: no error on %s (errors: %v)", c.key, errs)
				}
				names, err := f.API.Connectors(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(names) != 0 {
					t.Errorf("after a refused create, GET /connectors = %v", names)
				}
				waitNoPlugins(t, ctx, f)
			})
		}

		// The worker still works with the good plugins.
		ok := harness.Connector{Name: "good", Config: good}
		if _, err := f.API.CreateConnector(ctx, ok); err != nil {
			t.Fatal(err)
		}
		f.WaitStatus(ctx, "good", "the good connector to commit its 1000 records", false, func(s harness.ConnectorStatus) bool {
			return s.Floe != nil && s.Floe.RecordsOut >= 1000
		})
		f.Stop()
	})
}

// brokenPluginDir makes a plugin.path with the real datagen, partitioners
// and iceberg binaries (symlinked) and three broken ones: not executable,
// exiting at start, speaking protocol version 2.
func brokenPluginDir(t *testing.T, env harness.Env) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range []string{"datagen", "partitioners", "iceberg"} {
		if err := os.Symlink(env.PluginBin(b), filepath.Join(dir, "floe-plugin-"+b)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "floe-plugin-noexec"), "#!/bin/sh\nexit 0\n")
	crash := filepath.Join(dir, "floe-plugin-crash")
	writeFile(t, crash, "#!/bin/sh\necho 'cannot load libfoo.so' >&2\nexit 3\n")
	if err := os.Chmod(crash, 0o755); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the future-protocol test plugin needs the go command: %v", err)
	}
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, "floe-plugin-future"), "./testdata/plugins/protofuture")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build e2e/testdata/plugins/protofuture: %v\n%s", err, out)
	}
	return dir
}

// waitNoPlugins waits a few seconds for floe to have no plugin process
// (validation may start plugins briefly) and fails the test otherwise.
func waitNoPlugins(t *testing.T, ctx context.Context, f *harness.Floe) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		ps := f.Plugins()
		if len(ps) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("plugin processes still run for a connector that was refused: %v", ps)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
