package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestRESTConnectEntities reads every answer of a real `floe standalone`
// with Kafka Connect 4.x's own REST entity classes (connect-runtime's
// org.apache.kafka.connect.runtime.rest.entities) and a plain Jackson
// ObjectMapper, as Connect's RestClient and the Java tools built on them
// do: an unknown field (floe's progress in a status) or a value the
// classes refuse (a plugin type Connect has no PluginType for) fails the
// test. It also checks what kcctl trips over: GET /'s version must be a
// Kafka X.Y.Z version, and the status codes of stop and of restarting a
// STOPPED connector must be Connect's (204).
func TestRESTConnectEntities(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.ConnectClasses,
		harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Plugin("iceberg-maintenance"))
	ctx := harness.Context(t, 5*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})
	api := f.API

	name := "entities"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":    "iceberg",
		"source":             "datagen",
		"datagen.rate":       "200",
		"tasks.max":          "2",
		"commit.interval.ms": "500",
		"iceberg.tables":     "entities.orders",
		"maintenance":        "iceberg-maintenance",
	}}

	dir := t.TempDir()
	var manifest bytes.Buffer
	n := 0
	// keep records an answer for the Java decoder.
	keep := func(entity string, r *harness.Response) {
		n++
		file := filepath.Join(dir, fmt.Sprintf("%02d-%s.json", n, entity))
		if err := os.WriteFile(file, r.Body, 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&manifest, "%s %s\n", entity, file)
	}
	do := func(entity, method, path string, body any, want int) *harness.Response {
		t.Helper()
		r := mustDo(t, api, ctx, method, path, body, want)
		if entity != "" {
			keep(entity, r)
		}
		return r
	}

	root := do("ServerInfo", "GET", "/", nil, http.StatusOK)
	var info struct{ Version, Commit string }
	mustDecode(t, root, &info)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(info.Version) {
		t.Errorf("GET / version %q is not a Kafka X.Y.Z version (kcctl parses it as one)", info.Version)
	}
	if root.Header.Get("X-Floe-Version") == "" {
		t.Errorf("GET / has no X-Floe-Version header carrying floe's own version; headers %v", root.Header)
	}
	do("WorkerStatus", "GET", "/health", nil, http.StatusOK)
	do("ConnectorInfo", "POST", "/connectors", conn, http.StatusCreated)
	f.WaitStatus(ctx, name, "connector and 2 tasks RUNNING with a commit", false, func(s harness.ConnectorStatus) bool {
		return s.Running() && len(s.Tasks) == 2 && s.Floe != nil && s.Floe.Commits > 0
	})

	do("ConnectorNames", "GET", "/connectors", nil, http.StatusOK)
	do("Expanded", "GET", "/connectors?expand=status&expand=info", nil, http.StatusOK)
	do("ConnectorInfo", "GET", "/connectors/"+name, nil, http.StatusOK)
	do("ConnectorConfig", "GET", "/connectors/"+name+"/config", nil, http.StatusOK)
	do("ConnectorStateInfo", "GET", "/connectors/"+name+"/status", nil, http.StatusOK)
	do("TaskInfos", "GET", "/connectors/"+name+"/tasks", nil, http.StatusOK)
	do("TaskState", "GET", "/connectors/"+name+"/tasks/1/status", nil, http.StatusOK)
	do("ActiveTopics", "GET", "/connectors/"+name+"/topics", nil, http.StatusOK)
	do("ConnectorOffsets", "GET", "/connectors/"+name+"/offsets", nil, http.StatusOK)
	var plugins []harness.PluginInfo
	mustDecode(t, do("PluginInfos", "GET", "/connector-plugins", nil, http.StatusOK), &plugins)
	if !hasPlugin(plugins, icebergClass, "sink") {
		t.Errorf("GET /connector-plugins = %+v, want the iceberg sink listed by its Connect class %s", plugins, icebergClass)
	}
	do("PluginInfos", "GET", "/connector-plugins?connectorsOnly=false", nil, http.StatusOK)
	mustDecode(t, do("", "GET", "/connector-plugins?floe=true", nil, http.StatusOK), &plugins)
	if i := slices.IndexFunc(plugins, func(p harness.PluginInfo) bool { return p.Class == icebergClass }); i < 0 || plugins[i].Floe == nil || plugins[i].Floe.Name != "iceberg" {
		t.Errorf("GET /connector-plugins?floe=true = %+v, want floe's name iceberg for %s", plugins, icebergClass)
	}
	// The sink answers to floe's name, its class and the class's simple
	// name, with the same definitions.
	var want []harness.ConfigDef
	mustDecode(t, do("ConfigKeyInfos", "GET", "/connector-plugins/iceberg/config", nil, http.StatusOK), &want)
	for _, alias := range []string{icebergClass, "IcebergSinkConnector"} {
		var defs []harness.ConfigDef
		mustDecode(t, do("ConfigKeyInfos", "GET", "/connector-plugins/"+alias+"/config", nil, http.StatusOK), &defs)
		if len(defs) != len(want) || !hasDef(defs, "iceberg.tables") {
			t.Errorf("GET /connector-plugins/%s/config has %d keys, iceberg's has %d (iceberg.tables among them)", alias, len(defs), len(want))
		}
	}
	do("ConfigInfos", "PUT", "/connector-plugins/iceberg/config/validate", conn.Config, http.StatusOK)
	do("ConfigInfos", "PUT", "/connector-plugins/iceberg/config/validate", map[string]string{"connector.class": "iceberg", "tasks.max": "x"}, http.StatusOK)
	do("ConnectorInfo", "PUT", "/connectors/"+name+"/config", conn.Config, http.StatusOK)
	do("LoggerLevels", "GET", "/admin/loggers", nil, http.StatusOK)
	do("LoggerLevel", "GET", "/admin/loggers/root", nil, http.StatusOK)
	do("LoggerNames", "PUT", "/admin/loggers/floe", map[string]string{"level": "INFO"}, http.StatusOK)
	do("ErrorMessage", "GET", "/connectors/no-such-connector/status", nil, http.StatusNotFound)
	do("ErrorMessage", "POST", "/connectors", `{"name": "x", "config": {`, http.StatusBadRequest)
	f.WaitStatus(ctx, name, "RUNNING again after the config change", false, harness.ConnectorStatus.Running)
	do("ConnectorStateInfo", "POST", "/connectors/"+name+"/restart?includeTasks=true", nil, http.StatusAccepted)

	f.WaitStatus(ctx, name, "RUNNING after the restart", false, harness.ConnectorStatus.Running)
	// floe's progress is still there for those who ask for it.
	var withFloe harness.ConnectorStatus
	mustDecode(t, do("", "GET", "/connectors/"+name+"/status?floe=true", nil, http.StatusOK), &withFloe)
	if withFloe.Floe == nil {
		t.Errorf("GET /connectors/%s/status?floe=true has no floe progress", name)
	}
	do("", "PUT", "/connectors/"+name+"/stop", nil, http.StatusNoContent)
	f.WaitStatus(ctx, name, "STOPPED", false, func(s harness.ConnectorStatus) bool { return s.Connector.State == "STOPPED" })
	do("ConnectorStateInfo", "GET", "/connectors/"+name+"/status", nil, http.StatusOK)
	do("", "POST", "/connectors/"+name+"/restart", nil, http.StatusNoContent) // Connect: 204, it stays STOPPED
	do("", "PUT", "/connectors/"+name+"/resume", nil, http.StatusAccepted)
	f.WaitStatus(ctx, name, "RUNNING after resume", false, harness.ConnectorStatus.Running)
	do("", "DELETE", "/connectors/"+name, nil, http.StatusNoContent)

	runConnectEntities(t, ctx, env, dir, manifest.Bytes())
}

// runConnectEntities decodes the answers listed in manifest with
// ConnectEntities.java and fails t for each the classes refuse.
func runConnectEntities(t *testing.T, ctx context.Context, env harness.Env, dir string, manifest []byte) {
	t.Helper()
	mf := filepath.Join(dir, "manifest")
	if err := os.WriteFile(mf, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	src := repoFile(t, env, "e2e/testdata/connect/ConnectEntities.java")
	cmd := exec.CommandContext(ctx, "java", "-cp", filepath.Join(env.KafkaLibs, "*"), src, mf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var oks, fails int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ok "):
			oks++
		case strings.HasPrefix(line, "FAIL "):
			fails++
			entity, rest, _ := strings.Cut(strings.TrimPrefix(line, "FAIL "), " ")
			file, why, _ := strings.Cut(rest, ": ")
			body, _ := os.ReadFile(file)
			t.Errorf("Connect's %s refuses floe's answer %s: %s\nanswer: %s", entity, filepath.Base(file), why, truncateBytes(body, 600))
		}
	}
	if want := bytes.Count(manifest, []byte("\n")); oks+fails != want {
		t.Fatalf("ConnectEntities.java read %d of %d answers (%v)\nstdout:\n%s\nstderr:\n%s", oks+fails, want, err, out, stderr.String())
	}
	t.Logf("Connect 4.x entity classes decoded %d answers", oks)
}

func truncateBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
