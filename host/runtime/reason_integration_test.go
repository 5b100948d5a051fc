package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
)

// TestIntegrationRejectionReasonSaysEachFactOnce: a schema the iceberg
// sink rejects travels sink → host → source over real gRPC, and each layer
// adds only what it knows. The reason used to read "schema rejected:
// schema 1: schema 1: plugin …: schema rejected: schema 1: iceberg sink:
// … schema rejected: …".
func TestIntegrationRejectionReasonSaysEachFactOnce(t *testing.T) {
	reg := realPlugins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	st, err := store.OpenLocal(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	// The table cannot be created: its partition column does not exist.
	opts := Options{
		Name: "it-reject",
		Config: map[string]string{
			"name": "it-reject", "connector.class": "iceberg", "source": "datagen", "tasks.max": "1",
			"datagen.count": "10", "iceberg.tables": "demo.rejected",
			"iceberg.tables.default-partition-by": "day(no_such_column)",
		},
		Components: lookupComponents(t, reg, map[sdk.Kind]string{sdk.KindSource: "datagen", sdk.KindPartitioner: "hash", sdk.KindSink: "iceberg"}),
		DataDir:    dataDir, Plugins: registryPlugins{reg}, Offsets: st, Statuses: st,
	}
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop(ctx) }()
	var trace string
	for trace == "" {
		if s := c.Status(); len(s.Tasks) > 0 && s.Tasks[0].State == StateFailed {
			trace = s.Tasks[0].Trace
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the task did not fail: %+v", c.Status())
		case <-time.After(50 * time.Millisecond):
		}
	}
	for fact, want := range map[string]int{
		"schema rejected":            1, // the sentinel, wrapped once
		"schema 1:":                  1, // the client names the schema
		"floe-plugin-iceberg":        1, // the client names the plugin…
		`sink "iceberg"`:             1, // …and the component
		"iceberg sink:":              1, // the sink names itself…
		"demo.rejected":              1, // …and the table
		`no column "no_such_column"`: 1,
		"task 0":                     1, // the client names the source task and the call…
		": read:":                    1, // …which the host does not repeat
	} {
		if n := strings.Count(trace, fact); n != want {
			t.Errorf("%q appears %d times, want %d, in the trace:\n%s", fact, n, want, trace)
		}
	}
	t.Logf("trace: %s", trace)
}
