package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestWatchedFolder drives connectors through the worker's config.dir
// only: a connector file dropped in starts its connector, a broken file
// is reported (file, line) and changes nothing, an edit restarts the
// connector's tasks with the new config, and removing the file deletes
// the connector and ends its plugin processes.
func TestWatchedFolder(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 6*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{WatchConfigDir: true})
	api := f.API

	name := "watched-orders"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":    "iceberg",
		"source":             "datagen",
		"datagen.rate":       "200",
		"tasks.max":          "2",
		"commit.interval.ms": "1000",
		"iceberg.tables":     "watched.orders",
	}}
	file := filepath.Join(f.ConfigDir, name+".json")

	t.Run("drop in", func(t *testing.T) {
		harness.WriteConnectorFile(t, file, conn)
		f.WaitStatus(ctx, name, "the dropped-in connector RUNNING and committing", false, func(s harness.ConnectorStatus) bool {
			return s.Running() && len(s.Tasks) == 2 && s.Floe != nil && s.Floe.Commits > 0
		})
	})

	t.Run("broken file changes nothing", func(t *testing.T) {
		broken := filepath.Join(f.ConfigDir, "broken.json")
		if err := os.WriteFile(broken, []byte("{\n  \"name\": \"broken\",\n  \"config\": {\"connector.class\": \"iceberg\",,}\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.WaitFor(ctx, "the broken file reported in the log", func(context.Context) (bool, string, error) {
			return f.LogContains(`broken\.json.*line 3`), "", nil
		})
		names, err := api.Connectors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{name}) {
			t.Errorf("after a broken file, GET /connectors = %v, want only %s", names, name)
		}
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("edit restarts with the new config", func(t *testing.T) {
		edited := withConfig(conn, map[string]string{"datagen.key.cardinality": "77", "datagen.rate": "300"})
		// As editors do: write a temporary file, rename it over the old one.
		tmp := filepath.Join(f.ConfigDir, "."+name+".json.tmp")
		harness.WriteConnectorFile(t, tmp, edited)
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
		f.WaitFor(ctx, "the tasks running with the edited config", func(ctx context.Context) (bool, string, error) {
			tasks, err := api.Tasks(ctx, name)
			if err != nil {
				return false, err.Error(), nil
			}
			st, err := api.Status(ctx, name)
			if err != nil {
				return false, err.Error(), nil
			}
			ok := len(tasks) == 2 && st.Running()
			for _, task := range tasks {
				ok = ok && task.Config["datagen.key.cardinality"] == "77" && task.Config["datagen.rate"] == "300"
			}
			return ok, fmt.Sprintf("%s; task 0 config cardinality=%q", st.Summary(), taskConfig(tasks, "datagen.key.cardinality")), nil
		})
		cfg, err := api.Config(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if cfg["datagen.key.cardinality"] != "77" {
			t.Errorf("GET config after the edit: datagen.key.cardinality = %q, want 77", cfg["datagen.key.cardinality"])
		}
	})

	t.Run("remove deletes", func(t *testing.T) {
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		f.WaitFor(ctx, "the connector deleted", func(ctx context.Context) (bool, string, error) {
			_, err := api.Connector(ctx, name)
			if harness.IsStatus(err, 404) {
				return true, "404", nil
			}
			return false, fmt.Sprint(err), nil
		})
		names, err := api.Connectors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 0 {
			t.Errorf("after removing the file, GET /connectors = %v", names)
		}
		f.WaitFor(ctx, "the connector's plugin processes gone", func(context.Context) (bool, string, error) {
			ps := f.Plugins()
			return len(ps) == 0, fmt.Sprint(ps), nil
		})
	})

	f.Stop()
}

func taskConfig(tasks []harness.TaskInfo, key string) string {
	if len(tasks) == 0 {
		return "(no tasks)"
	}
	return tasks[0].Config[key]
}
