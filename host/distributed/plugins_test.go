package distributed

import (
	"slices"
	"testing"

	"github.com/floehq/floe/host/cluster"
)

func TestNeededPluginsKeepsWhatSomeWorkerHas(t *testing.T) {
	workers := []cluster.Worker{
		{ID: "a", Plugins: []string{"datagen", "iceberg", "hash"}},
		{ID: "b", Plugins: []string{"kafka", "iceberg", "hash"}},
	}
	config := map[string]string{
		"connector.class": "iceberg", "source": "datagen", "partitioner": "hash",
		// No live worker has it: the workers' refusals name it instead.
		"maintenance": "no-such-plugin",
	}
	got := neededPlugins(config, workers)
	slices.Sort(got)
	if want := []string{"datagen", "hash", "iceberg"}; !slices.Equal(got, want) {
		t.Errorf("neededPlugins = %v, want %v", got, want)
	}
	// Placed through the assignor, the connector goes to a only.
	res, err := cluster.Assign(cluster.Assignment{}, workers, []cluster.Connector{{Name: "c", Tasks: 2, Plugins: got, Target: "RUNNING"}})
	if err != nil {
		t.Fatal(err)
	}
	if ts := res.Assignment.WorkerTasks("b"); len(ts) > 0 {
		t.Errorf("worker b, which lacks datagen, got tasks %v", ts)
	}
	if cm := res.Assignment.Committers["c"]; cm.Worker != "a" {
		t.Errorf("committer on %q, want a", cm.Worker)
	}
}
