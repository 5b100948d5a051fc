package worker

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/registry"
)

// TestIntegrationRealPlugins runs the worker on the real plugin binaries,
// built from this module: validation in the plugins over gRPC, a bounded
// datagen → Iceberg connector, its offsets from the table's frontier
// once stopped, and its return after a worker restart.
func TestIntegrationRealPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the test that builds and runs the real plugins")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go tool is not on PATH: cannot build the plugin binaries")
	}
	root, _ := filepath.Abs("../..")
	bin := t.TempDir()
	for _, p := range []string{"plugins/datagen/cmd/floe-plugin-datagen", "plugins/partitioners/cmd/floe-plugin-partitioners", "plugins/iceberg/cmd/floe-plugin-iceberg"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Skipf("plugin package %s does not exist yet", p)
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, filepath.Base(p)), "./"+p)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", p, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reg, problems := registry.Scan(ctx, []string{bin}, "", nil)
	if len(problems) > 0 {
		t.Fatalf("plugin scan: %v", problems)
	}
	dataDir := t.TempDir()
	start := func() *Worker {
		w, err := New(ctx, Config{DataDir: dataDir, WorkerID: "it"}, Deps{Plugins: FromRegistry(reg)})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := start()
	cfg := map[string]string{
		"connector.class": "org.apache.iceberg.connect.IcebergSinkConnector", "source": "datagen",
		"tasks.max": "2", "commit.interval.ms": "1000", "datagen.count": "5000",
		"iceberg.tables": "demo.orders", "iceberg.catalog.jdbc.password": "pw",
	}

	// Validation: host keys, plugin keys (checked in the plugins), typos.
	bad := map[string]string{"datagen.cuont": "5", "iceberg.tables.auto-create-enabled": "maybe", "tasks.max": "x"}
	for k, v := range cfg {
		if _, ok := bad[k]; !ok {
			bad[k] = v
		}
	}
	infos, err := w.Validate(ctx, "iceberg", bad)
	if err != nil {
		t.Fatal(err)
	}
	msg := (&ValidationError{Infos: infos}).Error()
	for _, want := range []string{`did you mean "datagen.count"`, "iceberg.tables.auto-create-enabled", "tasks.max"} {
		if !strings.Contains(msg, want) {
			t.Errorf("validation lacks %q:\n%s", want, msg)
		}
	}
	for _, c := range infos.Configs {
		if c.Value.Name == "iceberg.catalog.jdbc.password" && c.Value.Value != nil {
			t.Errorf("secret echoed by validate")
		}
	}

	if _, err := w.CreateConnector(ctx, "orders", cfg, ""); err != nil {
		t.Fatal(err)
	}
	for {
		st, _ := w.ConnectorStatus(context.Background(), "orders")
		if st.Floe != nil && st.Floe.EndOfInput {
			if st.Floe.RecordsOut != 5000 {
				t.Fatalf("progress %+v", st.Floe)
			}
			break
		}
		if st.Connector.State == StateFailed || (len(st.Tasks) > 0 && st.Tasks[0].State == StateFailed) {
			t.Fatalf("failed: %+v", st)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no end of input: %+v", st)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if info, _ := w.Connector(context.Background(), "orders"); info.Config["iceberg.catalog.jdbc.password"] != Hidden {
		t.Errorf("secret shown: %v", info.Config)
	}
	if err := w.Stop(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	offs, err := w.Offsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, o := range offs {
		sum += o.Offset["position"].(int64)
	}
	// datagen's partitions are not Kafka's: partition and position.
	if len(offs) != 2 || sum != 5000 || offs[0].Partition["partition"] != "orders/0" {
		t.Fatalf("offsets of the stopped connector %+v", offs)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A new worker on the same data dir brings the connector back STOPPED;
	// resumed, it has nothing left to write.
	w2 := start()
	defer func() { _ = w2.Close(ctx) }()
	if st, _ := w2.ConnectorStatus(context.Background(), "orders"); st.Connector.State != StateStopped {
		t.Fatalf("after restart: %+v", st)
	}
	if err := w2.Resume(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	for {
		st, _ := w2.ConnectorStatus(context.Background(), "orders")
		if st.Floe != nil && st.Floe.EndOfInput {
			if st.Floe.RecordsOut != 0 {
				t.Fatalf("records written twice: %+v", st.Floe)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no end of input after resume: %+v", st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestValidateSendsEachPluginItsKeys: config/validate runs each
// component's validation in its plugin process with the config that
// plugin would run with: the keys its spec declares, plus floe.data.dir.
// The keyprobe plugin (host/runtime/testdata) records what each check saw.
func TestValidateSendsEachPluginItsKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the test that builds and runs a plugin")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go tool is not on PATH: cannot build the plugin binary")
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, registry.Prefix+"keyprobe"), "../runtime/testdata/keyprobe")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build keyprobe: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, problems := registry.Scan(ctx, []string{bin}, "", nil)
	if len(problems) > 0 {
		t.Fatalf("plugin scan: %v", problems)
	}
	dataDir := t.TempDir()
	w, err := New(ctx, Config{DataDir: dataDir, WorkerID: "it"}, Deps{Plugins: FromRegistry(reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close(ctx) }()
	infos, err := w.Validate(ctx, "probe-sink", map[string]string{
		"name": "keys", "connector.class": "probe-sink", "source": "probe-source",
		"partitioner": "probe-partitioner", "maintenance": "probe-maintenance",
		"commit.interval.ms": "1000", "errors.tolerance": "all",
		"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.sasl.password": "source-secret",
		"probe.fields": "id", "iceberg.tables": "a.b", "iceberg.catalog.jdbc.password": "catalog-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	if infos.ErrorCount != 0 {
		t.Fatalf("validation errors: %v", (&ValidationError{Infos: infos}).Error())
	}
	want := map[string][]string{
		"source":      {"floe.data.dir", "kafka.bootstrap.servers", "kafka.sasl.password"},
		"partitioner": {"floe.data.dir", "probe.fields"},
		"sink":        {"floe.data.dir", "iceberg.catalog.jdbc.password", "iceberg.tables"},
		"maintenance": {"commit.interval.ms", "floe.data.dir"},
	}
	for kind, keys := range want {
		path := filepath.Join(dataDir, "keys", "validate-"+kind+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the %s plugin's check did not run: %v", kind, err)
		}
		var got []string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, keys) {
			t.Errorf("the %s plugin validated %v, want %v", kind, got, keys)
		}
	}
}
