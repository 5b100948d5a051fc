package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"testing"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
)

// ClusterKeys are the worker keys of a new `floe distributed` cluster on
// env's Kafka: its own group.id and internal topics (one partition for
// configs, three for offsets, two for statuses, replicated as test topics
// are: min(brokers, 3)), and the broker's shortest session (6 s) so that
// a dead worker's connectors move soon.
func ClusterKeys(env Env) map[string]string {
	group := UniqueName("e2e-cluster")
	rf := strconv.Itoa(kafkatest.ReplicationFor(env.KafkaBrokers))
	return map[string]string{
		"bootstrap.servers":                 env.KafkaBootstrap,
		"group.id":                          group,
		"config.storage.topic":              group + "-configs",
		"offset.storage.topic":              group + "-offsets",
		"status.storage.topic":              group + "-status",
		"config.storage.replication.factor": rf,
		"offset.storage.replication.factor": rf,
		"status.storage.replication.factor": rf,
		"control.topic":                     group + "-control",
		"control.topic.replication.factor":  rf,
		"offset.storage.partitions":         "3",
		"status.storage.partitions":         "2",
		"session.timeout.ms":                "6000",
		"heartbeat.interval.ms":             "2000",
	}
}

// WorkerID is the worker.id [StartWorker] gives worker i: worker-a,
// worker-b, ….
func WorkerID(i int) string { return fmt.Sprintf("worker-%c", 'a'+i) }

// StartWorker starts `floe distributed` as worker i ([WorkerID]) of the
// cluster of keys ([ClusterKeys]) and returns its id and process.
func StartWorker(t testing.TB, env Env, keys map[string]string, i int) (string, *Floe) {
	t.Helper()
	id := WorkerID(i)
	wk := maps.Clone(keys)
	wk["worker.id"] = id
	return id, StartFloe(t, env, Options{Distributed: true, Worker: wk})
}

// CreateWhenLed creates conn through worker w, again while the cluster
// answers 409 (no leader yet, or a rebalance); other errors fail the
// test.
func CreateWhenLed(t testing.TB, ctx context.Context, w *Floe, conn Connector) {
	t.Helper()
	w.WaitFor(ctx, "connector "+conn.Name+" created", func(ctx context.Context) (bool, string, error) {
		_, err := w.API.CreateConnector(ctx, conn)
		if err == nil {
			return true, "", nil
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == 409 {
			return false, err.Error(), nil
		}
		return false, "", err
	})
}
