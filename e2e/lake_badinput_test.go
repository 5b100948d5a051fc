package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/lake"
	_ "github.com/floehq/floe/lake/backends" // the rest catalog and s3 file IO, as the plugins link them
)

// TestLakeBadInput gives floe a lake config with one thing wrong: the REST
// catalog's URI, its client secret, a warehouse it does not serve, a
// missing bucket (Postgres catalog, s3:// warehouse), floe's S3 secret.
// `floe validate` must fail naming the key, and a started connector must
// fail with the key in its trace, having created nothing: no namespace
// or table in the catalog, no object in the bucket.
func TestLakeBadInput(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Postgres, harness.LakeServices)
	ctx := harness.Context(t, 6*time.Minute)
	dir := t.TempDir()
	worker := filepath.Join(dir, "worker.json")
	writeFile(t, worker, fmt.Sprintf(`{"listeners": "http://127.0.0.1:0", "plugin.path": %q, "data.dir": %q}`, env.PluginDir(), filepath.Join(dir, "data")))

	rest := env.Lake.RESTCatalogKeys()
	pgS3 := env.Lake.PostgresS3Keys(env.PostgresURL, "s3://"+env.Lake.S3Bucket+"/badinput")
	cases := []struct {
		name    string
		base    map[string]string
		change  map[string]string
		key     string
		mention string
	}{
		{"REST catalog unreachable", rest, map[string]string{"iceberg.catalog.uri": "http://127.0.0.1:1"}, "iceberg.catalog.uri", "cannot reach the REST catalog at http://127.0.0.1:1"},
		{"wrong client secret", rest, map[string]string{"iceberg.catalog.credential": "floe:wrong-secret"}, "iceberg.catalog.credential", "refused the credentials"},
		{"warehouse the catalog refuses", rest, map[string]string{"iceberg.catalog.warehouse": "s3://" + env.Lake.S3Bucket + "/not-served"}, "iceberg.catalog.warehouse", "refused warehouse"},
		{"missing bucket", pgS3, map[string]string{"iceberg.catalog.warehouse": "s3://no-such-bucket-floe/w"}, "iceberg.catalog.warehouse", `bucket "no-such-bucket-floe" does not exist`},
		{"wrong S3 secret", rest, map[string]string{"iceberg.catalog.s3.secret-access-key": "wrong"}, "iceberg.catalog.s3.access-key-id", "refused the credentials"},
		// An unreachable store may be an outage: the task waits for it
		// up to the transient timeout (2 min by default) before it fails.
		{"object store unreachable", pgS3, map[string]string{"iceberg.catalog.s3.endpoint": "http://127.0.0.1:1", "iceberg.commit.retry.transient-timeout-ms": "6000"}, "iceberg.catalog.s3.endpoint", "cannot reach the object store at http://127.0.0.1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			namespace := harness.UniqueName("e2e_bad")
			config := map[string]string{
				"connector.class":             "iceberg",
				"source":                      "datagen",
				"datagen.count":               "1000",
				"iceberg.tables":              namespace + ".t",
				"plugin.restart.max.attempts": "1",
				"plugin.restart.backoff.ms":   "100",
			}
			for k, v := range c.base {
				config[k] = v
			}
			for k, v := range c.change {
				config[k] = v
			}
			name := strings.ReplaceAll(c.name, " ", "-")
			file := filepath.Join(dir, name+".json")
			harness.WriteConnectorFile(t, file, harness.Connector{Name: name, Config: config})

			res := harness.RunFloe(t, env, dir, 2*time.Minute, "validate", worker, file)
			if res.Code == 0 || !strings.Contains(res.Output(), c.mention) {
				t.Errorf("floe validate exited %d; want an error on %s mentioning %q:\n%s", res.Code, c.key, c.mention, res.Output())
			}
			for _, secret := range []string{"wrong-secret", env.Lake.S3SecretKey, "floe-catalog-secret"} {
				if strings.Contains(res.Output(), secret) {
					t.Errorf("floe validate printed a secret (%q):\n%s", secret, res.Output())
				}
			}

			f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{{Name: name, Config: config}}})
			st := f.WaitStatus(ctx, name, "a failed task", true, func(s harness.ConnectorStatus) bool {
				return anyTaskFailed(s)
			})
			trace := st.Connector.Trace
			for _, task := range st.Tasks {
				trace += task.Trace
			}
			if !strings.Contains(trace, c.key+": ") || !strings.Contains(trace, c.mention) {
				t.Errorf("the failed connector's trace does not name %s with %q:\n%s", c.key, c.mention, trace)
			}
			f.Stop()

			// Nothing half-created, in the catalog or the bucket.
			checkNothingCreated(t, ctx, env, c.base, namespace)
		})
	}
}

func anyTaskFailed(s harness.ConnectorStatus) bool {
	if s.Connector.State == "FAILED" {
		return true
	}
	for _, task := range s.Tasks {
		if task.State == "FAILED" {
			return true
		}
	}
	return false
}

// checkNothingCreated opens the (good) catalog and checks namespace does
// not exist there and no object of it is in the bucket.
func checkNothingCreated(t *testing.T, ctx context.Context, env harness.Env, good map[string]string, namespace string) {
	t.Helper()
	c, err := lake.ParseCatalogConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	cat, closeCat, err := lake.OpenCatalog(ctx, c)
	if err != nil {
		t.Fatalf("open the good catalog: %v", err)
	}
	defer func() { _ = closeCat() }()
	if exists, err := cat.CheckNamespaceExists(ctx, table.Identifier{namespace}); err != nil || exists {
		t.Errorf("namespace %s exists in the catalog (%v) after a refused start: half-created", namespace, err)
	}
	for _, prefix := range []string{"s3://" + env.Lake.S3Bucket + "/rest/" + namespace, "s3://" + env.Lake.S3Bucket + "/badinput/" + namespace} {
		objs, err := env.Lake.ListObjects(ctx, prefix)
		if err != nil || len(objs) > 0 {
			t.Errorf("objects under %s after a refused start: %v (%v)", prefix, objs, err)
		}
	}
}

// TestLakeDeadLetterQueue is TestKafkaDeadLetterQueue's tolerance=all
// case on the REST catalog and S3, then on the Postgres catalog with its
// warehouse in S3: bad records reach the dead-letter topic once with
// their bytes and headers, good ones the table once.
func TestLakeDeadLetterQueue(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	d := newDLQInput(t, harness.Context(t, time.Minute), env)
	for _, tc := range lakeStacks(env) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := harness.Context(t, 5*time.Minute)
			f := harness.StartFloe(t, env, harness.Options{})
			checkDeadLetters(t, ctx, env, f, d, tc.stack)
		})
	}
}
