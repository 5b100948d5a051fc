package kafkastore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/floehq/floe/host/kclient"
)

// Worker config keys this package reads: Kafka Connect's distributed
// worker keys, with Connect's meanings and defaults.
const (
	KeyGroupID                 = "group.id"
	KeyConfigTopic             = "config.storage.topic"
	KeyConfigReplicationFactor = "config.storage.replication.factor"
	KeyOffsetTopic             = "offset.storage.topic"
	KeyOffsetReplicationFactor = "offset.storage.replication.factor"
	KeyOffsetPartitions        = "offset.storage.partitions"
	KeyStatusTopic             = "status.storage.topic"
	KeyStatusReplicationFactor = "status.storage.replication.factor"
	KeyStatusPartitions        = "status.storage.partitions"
)

// Defaults, as Kafka Connect's. A replication factor above the broker
// count is capped at it when the topic is created.
const (
	DefaultReplicationFactor = 3
	DefaultOffsetPartitions  = 25
	DefaultStatusPartitions  = 5
)

// Settings are the stores' part of a distributed worker's config.
type Settings struct {
	// Client reaches the cluster (bootstrap.servers, security.protocol,
	// sasl.*, ssl.*).
	Client kclient.Config
	// GroupID is the cluster's group.id, written into every record.
	GroupID string
	// ConfigTopic, OffsetTopic and StatusTopic are the internal topics and
	// how to create them when missing.
	ConfigTopic, OffsetTopic, StatusTopic kclient.TopicSpec
}

// ParseSettings reads the stores' keys from a worker config: group.id
// and the three topic names are required; the replication factors
// default to 3 and may be -1 (the broker's default); the offset and
// status topics default to 25 and 5 partitions. Other keys are ignored
// (the worker checks for unknown keys). Errors name the key.
func ParseSettings(raw map[string]string) (Settings, error) {
	client, err := kclient.FromWorker(raw)
	if err != nil {
		return Settings{}, err
	}
	s := Settings{Client: client, GroupID: strings.TrimSpace(raw[KeyGroupID])}
	if s.GroupID == "" {
		return Settings{}, fmt.Errorf("worker config: %s is required: it names the cluster (workers with the same group.id share connectors) and must not be a consumer group's id", KeyGroupID)
	}
	topic := func(key, rfKey, partsKey string, defParts int, holds string) (kclient.TopicSpec, error) {
		spec := kclient.TopicSpec{Name: strings.TrimSpace(raw[key]), Key: key, ReplicationFactor: DefaultReplicationFactor, Partitions: defParts}
		if spec.Name == "" {
			return spec, fmt.Errorf("worker config: %s is required: the compacted topic that holds the cluster's %s (floe creates it when missing)", key, holds)
		}
		var err error
		if spec.ReplicationFactor, err = kclient.TopicCount(raw, rfKey, DefaultReplicationFactor); err != nil {
			return spec, err
		}
		if partsKey == "" {
			spec.Partitions, spec.SinglePartition = 1, true
		} else if spec.Partitions, err = kclient.TopicCount(raw, partsKey, defParts); err != nil {
			return spec, err
		}
		return spec, nil
	}
	if s.ConfigTopic, err = topic(KeyConfigTopic, KeyConfigReplicationFactor, "", 1, "connector configs"); err != nil {
		return Settings{}, err
	}
	if s.OffsetTopic, err = topic(KeyOffsetTopic, KeyOffsetReplicationFactor, KeyOffsetPartitions, DefaultOffsetPartitions, "committed offsets"); err != nil {
		return Settings{}, err
	}
	if s.StatusTopic, err = topic(KeyStatusTopic, KeyStatusReplicationFactor, KeyStatusPartitions, DefaultStatusPartitions, "statuses"); err != nil {
		return Settings{}, err
	}
	specs := []kclient.TopicSpec{s.ConfigTopic, s.OffsetTopic, s.StatusTopic}
	for i := range specs {
		for j := i + 1; j < len(specs); j++ {
			if specs[i].Name == specs[j].Name {
				return Settings{}, fmt.Errorf("worker config: %s and %s are both %q: each store needs its own topic", specs[i].Key, specs[j].Key, specs[i].Name)
			}
		}
	}
	return s, nil
}

// Options are what a store needs beyond the settings.
type Options struct {
	// WorkerID is this worker's id: the config store's leader record
	// names it, and client ids carry it.
	WorkerID string
	// Logger receives the clients' logs and the stores' warnings; nil
	// discards them.
	Logger *slog.Logger
	// OnApply is called for every record the store's reader applies (see
	// TableConfig.OnApply): the herder reacts to config changes with it.
	OnApply func(Record)
}

// openTable makes sure the topic exists and is usable, then opens the
// table on it.
func openTable(ctx context.Context, s Settings, spec kclient.TopicSpec, opts Options, tc TableConfig) (*Table, error) {
	admin, err := s.Client.NewAdmin(opts.Logger)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.EnsureTopic(ctx, spec); err != nil {
		return nil, err
	}
	tc.Client, tc.Topic, tc.TopicKey, tc.GroupID = s.Client, spec.Name, spec.Key, s.GroupID
	tc.Logger, tc.OnApply = opts.Logger, opts.OnApply
	if tc.ClientID == "" {
		tc.ClientID = "floe-" + opts.WorkerID + "-" + strings.TrimSuffix(spec.Key, ".storage.topic")
	}
	return OpenTable(ctx, tc)
}
