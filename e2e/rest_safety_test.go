package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestRESTRefusesBrowserRequests sends a real `floe standalone` the
// requests a web page in a user's browser can make: a cross-origin
// text/plain POST creating a connector (no CORS preflight needed), a
// cross-origin restart and delete, a read through a name rebound to
// 127.0.0.1. Each is refused and changes nothing; the same calls from a
// non-browser client work.
func TestRESTRefusesBrowserRequests(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 3*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})
	api := f.API

	send := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, api.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("%s %s answered CORS header Access-Control-Allow-Origin %q", method, path, v)
		}
		return resp.StatusCode, string(b)
	}
	body := `{"name": "csrf", "config": {"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "iceberg.tables": "csrf.t"}}`
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		code   int
	}{
		{"text/plain POST", "POST", "/connectors", body, map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"text/plain POST without Origin", "POST", "/connectors", body, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"form POST", "POST", "/connectors", body, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"rebound name", "GET", "/connectors", "", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
	} {
		code, answer := send(tc.method, tc.path, tc.body, tc.header)
		if code != tc.code {
			t.Errorf("%s: %s %s answered %d %s, want %d", tc.name, tc.method, tc.path, code, answer, tc.code)
		}
	}
	if names, err := api.Connectors(ctx); err != nil || len(names) != 0 {
		t.Fatalf("after refused requests GET /connectors = %v %v, want none", names, err)
	}

	if _, err := api.CreateConnector(ctx, harness.Connector{Name: "csrf", Config: map[string]string{
		"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "iceberg.tables": "csrf.t",
	}}); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "csrf", "RUNNING", false, harness.ConnectorStatus.Running)
	for _, path := range []string{"/connectors/csrf/restart", "/connectors/csrf"} {
		method := map[string]string{"/connectors/csrf/restart": "POST", "/connectors/csrf": "DELETE"}[path]
		if code, answer := send(method, path, "", map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
			t.Errorf("cross-origin %s %s answered %d %s, want 403", method, path, code, answer)
		}
	}
	if _, err := api.Connector(ctx, "csrf"); err != nil {
		t.Errorf("after a refused cross-origin DELETE: %v", err)
	}
	if code, _ := send("GET", "/connectors", "", map[string]string{"Host": "localhost"}); code != http.StatusOK {
		t.Errorf("GET with Host localhost answered %d", code)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := api.DeleteConnector(rctx, "csrf"); err != nil {
		t.Fatal(err)
	}
}

// TestRESTNoGhostConnector sends an invalid PUT of a new connector and,
// 50 ms later while it still validates, a valid PUT of the same name, 20
// rounds on a real floe. Every answer must tell the truth: the invalid
// one 400, the valid one 201 (it created the connector), the connector
// listed and RUNNING with one runtime (the plugin processes a lone PUT of
// the valid config starts, measured first), and after DELETE no plugin
// process left. Before the fix the valid PUT answered 404 and left the
// connector running unlisted; the next PUT started a second runtime.
func TestRESTNoGhostConnector(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 5*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})
	api := f.API
	valid := map[string]string{"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "tasks.max": "1", "iceberg.tables": "ghost.t"}
	invalid := maps.Clone(valid)
	invalid["iceberg.tables"] = "no_namespace" // refused by the sink plugin, after it started

	// Names no URL or file holds are bad input: 400, not 500.
	for _, name := range []string{".", "..", strings.Repeat("n", 251)} {
		r, err := api.Do(ctx, "POST", "/connectors", map[string]any{"name": name, "config": valid})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusBadRequest {
			t.Errorf("POST a connector named %.20q (%d bytes): %d %s, want 400", name, len(name), r.Status, r.Body)
		}
	}
	// One runtime's processes, by binary: what a lone PUT starts.
	procNames := func() []string {
		var names []string
		for _, p := range f.Plugins() {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		return names
	}
	waitProcs := func(what string, want []string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		f.WaitFor(wctx, what, func(context.Context) (bool, string, error) {
			got := procNames()
			return slices.Equal(got, want), fmt.Sprintf("%d plugin processes %v, want %d %v", len(got), got, len(want), want), nil
		})
	}
	if _, _, err := api.PutConfig(ctx, "ghost", valid); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "ghost", "RUNNING", false, harness.ConnectorStatus.Running)
	time.Sleep(2 * time.Second) // validation's processes exit
	oneRuntime := procNames()
	if len(oneRuntime) == 0 {
		t.Fatal("a RUNNING connector has no plugin process")
	}
	t.Logf("one runtime is %d plugin processes: %v", len(oneRuntime), oneRuntime)
	if err := api.DeleteConnector(ctx, "ghost"); err != nil {
		t.Fatal(err)
	}
	waitProcs("no plugin process after the first delete", nil)

	for round := range 20 {
		type answer struct {
			code int
			body string
		}
		first := make(chan answer, 1)
		go func() {
			r, err := api.Do(ctx, "PUT", "/connectors/ghost/config", invalid)
			if err != nil {
				first <- answer{0, err.Error()}
				return
			}
			first <- answer{r.Status, string(r.Body)}
		}()
		time.Sleep(50 * time.Millisecond)
		r, err := api.Do(ctx, "PUT", "/connectors/ghost/config", valid)
		if err != nil {
			t.Fatal(err)
		}
		a := <-first
		if a.code != http.StatusBadRequest {
			t.Fatalf("round %d: invalid PUT answered %d %s, want 400", round, a.code, a.body)
		}
		if r.Status != http.StatusCreated {
			t.Fatalf("round %d: valid PUT answered %d %s, want 201 (created)", round, r.Status, r.Body)
		}
		if names, err := api.Connectors(ctx); err != nil || !slices.Equal(names, []string{"ghost"}) {
			t.Fatalf("round %d: GET /connectors = %v %v, want [ghost]", round, names, err)
		}
		f.WaitStatus(ctx, "ghost", "RUNNING", false, harness.ConnectorStatus.Running)
		// The invalid PUT's validation processes may take a moment to
		// exit; a ghost runtime would stay.
		waitProcs(fmt.Sprintf("round %d: one runtime while RUNNING", round), oneRuntime)
		if err := api.DeleteConnector(ctx, "ghost"); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		waitProcs(fmt.Sprintf("round %d: no plugin process after the delete", round), nil)
	}
}

// TestSecondWorkerOnDataDirFails starts a second `floe standalone` on the
// data dir of a running one (on another port): it must exit non-zero at
// once naming the data dir and the first one's pid, and start none of
// the stored connectors (no plugin process of its own).
func TestSecondWorkerOnDataDirFails(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 3*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})
	if _, err := f.API.CreateConnector(ctx, harness.Connector{Name: "owned", Config: map[string]string{
		"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "iceberg.tables": "owned.t",
	}}); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "owned", "RUNNING", false, harness.ConnectorStatus.Running)
	before := len(f.Plugins())

	second := filepath.Join(t.TempDir(), "worker.json")
	cfg := fmt.Sprintf(`{"listeners": "http://127.0.0.1:0", "plugin.path": %q, "data.dir": %q}`, env.PluginDir(), f.DataDir)
	if err := os.WriteFile(second, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, env.FloeBin(), "standalone", second).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || cctx.Err() != nil {
		t.Fatalf("the second worker did not fail at once: %v\n%s", err, out)
	}
	for _, want := range []string{f.DataDir, fmt.Sprintf("pid %d", f.PID())} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the second worker's error does not name %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "connector restored") || strings.Contains(string(out), "plugin process started") {
		t.Errorf("the second worker started connectors:\n%s", out)
	}
	if after := len(f.Plugins()); after != before {
		t.Errorf("plugin processes of the first worker went from %d to %d", before, after)
	}
	if st, err := f.API.Status(ctx, "owned"); err != nil || !st.Running() {
		t.Errorf("the first worker's connector after the attempt: %+v %v", st, err)
	}
}

// TestConfigProvidersResolveInTheWorker gives a real floe
// config.providers=file,env and a connector whose table name, rate and
// catalog password are ${file:…} and ${env:…} references. The worker
// resolves them (the table floe writes has the file's name), every REST
// answer shows the references (or [hidden]), and the secret value appears
// in no answer, no log line and no file of the data dir.
func TestConfigProvidersResolveInTheWorker(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 3*time.Minute)
	dir := t.TempDir()
	secret := harness.UniqueName("provided-secret")
	props := filepath.Join(dir, "connector.properties")
	if err := os.WriteFile(props, []byte("table=provided.orders\npassword="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := harness.StartFloe(t, env, harness.Options{
		Worker: map[string]string{"config.providers": "file,env"},
		Env:    []string{"FLOE_E2E_RATE=50"},
	})
	var leaks []string
	f.API.Observe = func(method, path string, r *harness.Response) {
		if strings.Contains(string(r.Body), secret) {
			leaks = append(leaks, method+" "+path)
		}
	}
	cfg := map[string]string{
		"connector.class":               "iceberg",
		"source":                        "datagen",
		"datagen.rate":                  "${env:FLOE_E2E_RATE}",
		"iceberg.tables":                "${file:" + props + ":table}",
		"iceberg.catalog.jdbc.password": "${file:" + props + ":password}",
		"commit.interval.ms":            "500",
	}
	if _, err := f.API.CreateConnector(ctx, harness.Connector{Name: "provided", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "provided", "a commit", false, func(s harness.ConnectorStatus) bool { return s.Floe != nil && s.Floe.Commits > 0 })
	got, err := f.API.Config(ctx, "provided")
	if err != nil {
		t.Fatal(err)
	}
	if got["iceberg.tables"] != cfg["iceberg.tables"] || got["datagen.rate"] != cfg["datagen.rate"] {
		t.Errorf("GET config = %v, want the references as given", got)
	}
	tables, err := f.API.Tables(ctx, "provided")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(tables), "provided.orders") {
		t.Errorf("GET tables = %v, want the table the file names (provided.orders)", tables)
	}
	for _, path := range []string{"/connectors/provided", "/connectors/provided/tasks", "/connectors?expand=info&expand=status"} {
		if _, err := f.API.Do(ctx, "GET", path, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.API.Validate(ctx, "iceberg", cfg); err != nil {
		t.Fatal(err)
	}
	if len(leaks) > 0 {
		t.Errorf("the provided secret was returned by %v", leaks)
	}
	if strings.Contains(f.Log(), secret) {
		t.Errorf("the provided secret is in floe's log")
	}
	_ = filepath.Walk(f.DataDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Size() > 1<<20 {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
			t.Errorf("the provided secret is in %s", p)
		}
		return nil
	})
}

// TestSecretPatternsNeverLeave creates, on a real floe, a connector
// carrying each secret that only its key's name or its shape marks (no
// plugin declares them PASSWORD): a catalog's bearer header, an ADLS
// connection string's AccountKey=, an S3 SSE-C key and a librdkafka OAuth
// config's clientSecret=. None of the random secrets may come back in any
// REST answer (create, update, config, tasks, expand=info, validate with
// per-key errors), floe's log, or a file of the run folder other than the
// config store (data/connectors/, which keeps the config as given).
//
// The connector reads the real broker with the kafka source and writes
// the embedded catalog, so it validates and RUNs: every secret reaches
// the plugin processes (librdkafka takes sasl.oauthbearer.config even on
// PLAINTEXT; iceberg-go takes the catalog properties, which a local
// warehouse does not use), and their logs and files are checked too.
func TestSecretPatternsNeverLeave(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry)
	ctx := harness.Context(t, 4*time.Minute)
	topic := harness.UniqueName("e2e_secrets")
	if err := harness.CreateTopic(ctx, env, topic, 1); err != nil {
		t.Fatal(err)
	}
	bearer, accountKey := harness.UniqueName("bearer"), harness.UniqueName("accountkey")
	sseKey, clientSecret := harness.UniqueName("ssekey"), harness.UniqueName("clientsecret")
	secrets := []string{bearer, accountKey, sseKey, clientSecret}

	f := harness.StartFloe(t, env, harness.Options{})
	var leaks []string
	f.API.Observe = func(method, path string, r *harness.Response) {
		for _, s := range secrets {
			if strings.Contains(string(r.Body), s) {
				leaks = append(leaks, fmt.Sprintf("%s %s (%d) returns %s", method, path, r.Status, s))
			}
		}
	}
	cfg := map[string]string{
		"connector.class":                      "iceberg",
		"source":                               "kafka",
		"topics":                               topic,
		"kafka.bootstrap.servers":              env.KafkaBootstrap,
		"schema.registry.url":                  env.SchemaRegistryURL,
		"iceberg.tables":                       "secrets.t",
		"iceberg.catalog.header.Authorization": "Bearer " + bearer,
		"iceberg.catalog.adls.connection-string.floeacct": "DefaultEndpointsProtocol=https;AccountName=floeacct;AccountKey=" + accountKey + ";EndpointSuffix=core.windows.net",
		"iceberg.catalog.s3.sse.key":                      sseKey,
		"kafka.sasl.oauthbearer.config":                   "clientId=floe clientSecret=" + clientSecret + " scope=all",
	}
	if _, err := f.API.CreateConnector(ctx, harness.Connector{Name: "secrets", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "secrets", "RUNNING", false, harness.ConnectorStatus.Running)
	updated := maps.Clone(cfg)
	updated["commit.interval.ms"] = "2000"
	if _, _, err := f.API.PutConfig(ctx, "secrets", updated); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "secrets", "RUNNING after the update", false, harness.ConnectorStatus.Running)
	for _, path := range []string{"/connectors/secrets", "/connectors/secrets/config", "/connectors/secrets/tasks",
		"/connectors?expand=info", "/connectors?expand=info&expand=status"} {
		if _, err := f.API.Do(ctx, "GET", path, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Validation echoes every value; with per-key errors too (a bad
	// tasks.max, and a secret-bearing value that fails its own check).
	if _, err := f.API.Validate(ctx, "iceberg", cfg); err != nil {
		t.Fatal(err)
	}
	bad := maps.Clone(cfg)
	bad["tasks.max"] = "many"
	bad["kafka.bootstrap.servers"] = ""
	bad["iceberg.tables"] = "Bearer " + bearer
	infos, err := f.API.Validate(ctx, "iceberg", bad)
	if err != nil {
		t.Fatal(err)
	}
	if infos.ErrorCount == 0 {
		t.Errorf("validating a bad config found no error; the per-key errors are not checked")
	}
	if len(leaks) > 0 {
		t.Errorf("secrets returned by the REST API:\n%s", strings.Join(leaks, "\n"))
	}
	log := f.Log()
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("secret %s is in floe's log", s)
		}
	}
	store := filepath.Join(f.DataDir, "connectors")
	_ = filepath.Walk(f.Dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.IsDir() {
			if p == store {
				return filepath.SkipDir
			}
			return nil
		}
		if info.Size() > 8<<20 {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("secret %s is in %s", s, p)
			}
		}
		return nil
	})
	if err := f.API.DeleteConnector(ctx, "secrets"); err != nil {
		t.Fatal(err)
	}
}
