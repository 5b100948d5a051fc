package worker

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/host/runtime"
)

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A Kafka Connect sink config (topics, no source, the brokers and
// converters in the worker config, the sink named by its simple class
// name, carried-over Apache sink keys) validates and runs; the keys floe
// ignores are logged, each naming the key and why; the stored config stays
// as given.
func TestConnectConfigRunsUnchanged(t *testing.T) {
	fp := newFakePlugins()
	var logs syncBuffer
	w, err := New(context.Background(), Config{DataDir: t.TempDir(), WorkerID: "w1", ConnectorDefaults: map[string]string{
		"bootstrap.servers": "broker:9092", "value.converter": "io.confluent.connect.avro.AvroConverter",
		"value.converter.schemas.enable": "false",
	}}, Deps{
		Plugins: fp,
		Logger:  slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Tuning:  runtime.Tuning{ReadPoll: 10 * time.Millisecond, CloseTimeout: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	cfg := map[string]string{
		"connector.class": "TblSink", "topics": "events", "tbl.path": "/x", "tasks.max": "1", "commit.interval.ms": "20",
		"iceberg.control.topic": "control-iceberg", "iceberg.kafka.auto.offset.reset": "earliest",
	}
	infos, err := w.Validate(context.Background(), "TblSink", withName(cfg, "c"))
	if err != nil || infos.ErrorCount != 0 {
		t.Fatalf("validate: %v %+v", err, errorsOf(infos))
	}
	shown := map[string]string{}
	for _, c := range infos.Configs {
		if c.Value.Value != nil {
			shown[c.Value.Name] = *c.Value.Value
		}
	}
	if shown["source"] != "kafka" || shown["kafka.bootstrap.servers"] != "broker:9092" || shown["iceberg.control.topic"] != "control-iceberg" {
		t.Errorf("validate shows source %q, kafka.bootstrap.servers %q, iceberg.control.topic %q: want kafka, the worker's brokers, the key as given",
			shown["source"], shown["kafka.bootstrap.servers"], shown["iceberg.control.topic"])
	}

	info, err := w.CreateConnector(context.Background(), "c", withName(cfg, "c"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, derived := info.Config["source"]; derived || info.Config["connector.class"] != "TblSink" {
		t.Errorf("stored config changed: %v", info.Config)
	}
	waitFor(t, "the connector running", func() bool {
		st, err := w.ConnectorStatus(context.Background(), "c")
		return err == nil && st.Connector.State == StateRunning && len(st.Tasks) == 1 && st.Tasks[0].State == StateRunning
	})
	out := logs.String()
	for _, key := range []string{"iceberg.control.topic", "iceberg.kafka.auto.offset.reset", "value.converter.schemas.enable"} {
		if !strings.Contains(out, `"key":"`+key+`"`) || !strings.Contains(out, "accepted but ignored") {
			t.Errorf("no warning naming ignored key %s in the log:\n%s", key, out)
		}
	}

	// A converter floe cannot read is an error naming the key.
	bad := withName(cfg, "c2")
	bad["value.converter"] = "org.apache.kafka.connect.json.JsonConverter"
	_, err = w.CreateConnector(context.Background(), "c2", bad, "")
	if err == nil || !strings.Contains(err.Error(), "value.converter: org.apache.kafka.connect.json.JsonConverter is not supported yet") {
		t.Errorf("JSON converter: %v", err)
	}
}

func errorsOf(infos ConfigInfos) []string {
	var out []string
	for _, c := range infos.Configs {
		for _, e := range c.Value.Errors {
			out = append(out, c.Value.Name+": "+e)
		}
	}
	return out
}

func TestConfigHTTPSNeedsCertificate(t *testing.T) {
	_, err := ConfigFromMap(map[string]string{"listeners": "https://127.0.0.1:8443"}, "w.json")
	if err == nil || !strings.Contains(err.Error(), KeyTLSCert) || !strings.Contains(err.Error(), KeyTLSKey) {
		t.Errorf("https without a certificate: %v, want an error naming %s and %s", err, KeyTLSCert, KeyTLSKey)
	}
	c, err := ConfigFromMap(map[string]string{"listeners": "https://127.0.0.1:8443", KeyTLSCert: "c.pem", KeyTLSKey: "k.pem",
		KeyRESTBasicFile: "users", KeyRESTBearerFile: "tokens", "bootstrap.servers": "b:9092"}, "w.json")
	if err != nil || c.TLSCert != "c.pem" || c.RESTBasicFile != "users" || c.RESTBearerFile != "tokens" || c.ConnectorDefaults["bootstrap.servers"] != "b:9092" {
		t.Errorf("config: %+v %v", c, err)
	}
}

// Config provider references are stored and answered as given; the
// plugins get the values; a reference that does not resolve is a
// validation error naming the key and the reference, never a value.
func TestConfigProviders(t *testing.T) {
	dir := t.TempDir()
	secrets := dir + "/secrets.properties"
	if err := os.WriteFile(secrets, []byte("path=/resolved/path\npassword=pw-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOE_TEST_TBL_PASSWORD", "pw-from-env")
	wc, err := ConfigFromMap(map[string]string{"data.dir": t.TempDir(), "config.providers": "file,env"}, "w.json")
	if err != nil {
		t.Fatal(err)
	}
	fp := newFakePlugins()
	w, err := New(context.Background(), wc, Deps{Plugins: fp, Tuning: runtime.Tuning{ReadPoll: 10 * time.Millisecond, CloseTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	cfg := baseConfig()
	cfg["tbl.path"] = "${file:" + secrets + ":path}"
	cfg["tbl.password"] = "${env:FLOE_TEST_TBL_PASSWORD}"
	info, err := w.CreateConnector(context.Background(), "p", cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Config["tbl.path"] != cfg["tbl.path"] {
		t.Errorf("answered tbl.path %q, want the reference %q", info.Config["tbl.path"], cfg["tbl.path"])
	}
	waitFor(t, "the sink opened", func() bool {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		return len(fp.sinkCfgs) > 0
	})
	fp.mu.Lock()
	got := fp.sinkCfgs[0]
	fp.mu.Unlock()
	if got["tbl.path"] != "/resolved/path" || got["tbl.password"] != "pw-from-env" {
		t.Errorf("the sink got tbl.path %q and tbl.password %q, want the providers' values", got["tbl.path"], got["tbl.password"])
	}

	bad := baseConfig()
	bad["tbl.path"] = "${file:" + secrets + ":nope}"
	_, err = w.CreateConnector(context.Background(), "q", bad, "")
	if err == nil || !strings.Contains(err.Error(), "tbl.path") || !strings.Contains(err.Error(), `no key "nope"`) || strings.Contains(err.Error(), "pw-from") {
		t.Errorf("unresolvable reference: %v", err)
	}
}
