package dlq

import (
	"fmt"
	"strconv"
	"strings"
)

// Connector config keys this package reads. The worker declares them in
// the host's spec; they are named here so the two stay in step.
const (
	KeyTolerance          = "errors.tolerance"
	KeyTopic              = "errors.deadletterqueue.topic.name"
	KeyReplicationFactor  = "errors.deadletterqueue.topic.replication.factor"
	KeyContextHeaders     = "errors.deadletterqueue.context.headers.enable"
	KeyProducerPrefix     = "errors.deadletterqueue.producer."
	KeyLogEnable          = "errors.log.enable"
	KeyLogIncludeMessages = "errors.log.include.messages"
	KeyKafkaBootstrap     = "kafka.bootstrap.servers"
)

const (
	defaultReplication = 3
	bootstrapServers   = "bootstrap.servers"
)

// Config is the dead-letter behaviour of one connector.
type Config struct {
	Connector string
	// TolerateAll is errors.tolerance=all: bad records are skipped (sent to
	// the topic, or logged). False fails the task on the first one.
	TolerateAll bool
	// Topic is the dead-letter topic; empty means log and count only.
	Topic             string
	ReplicationFactor int
	ContextHeaders    bool
	// Producer holds librdkafka settings, bootstrap.servers included.
	Producer           map[string]string
	LogEnable          bool
	LogIncludeMessages bool
}

// ParseConfig reads a connector's errors.* keys. Errors name the key.
func ParseConfig(connector string, cfg map[string]string) (Config, error) {
	c := Config{
		Connector:         connector,
		Topic:             strings.TrimSpace(cfg[KeyTopic]),
		ReplicationFactor: defaultReplication,
		ContextHeaders:    true,
		Producer:          map[string]string{},
	}
	switch t := strings.TrimSpace(cfg[KeyTolerance]); t {
	case "", "none":
	case "all":
		c.TolerateAll = true
	default:
		return c, fmt.Errorf("%s: must be none or all, got %q", KeyTolerance, t)
	}
	if v := strings.TrimSpace(cfg[KeyReplicationFactor]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || (n < 1 && n != -1) {
			return c, fmt.Errorf("%s: must be a positive integer (or -1 for the broker default), got %q", KeyReplicationFactor, v)
		}
		c.ReplicationFactor = n
	}
	var err error
	if c.ContextHeaders, err = boolKey(cfg, KeyContextHeaders, true); err != nil {
		return c, err
	}
	if c.LogEnable, err = boolKey(cfg, KeyLogEnable, false); err != nil {
		return c, err
	}
	if c.LogIncludeMessages, err = boolKey(cfg, KeyLogIncludeMessages, false); err != nil {
		return c, err
	}
	for k, v := range cfg {
		if rest, ok := strings.CutPrefix(k, KeyProducerPrefix); ok && rest != "" {
			c.Producer[rest] = v
		}
	}
	if _, ok := c.Producer[bootstrapServers]; !ok {
		if b := strings.TrimSpace(cfg[KeyKafkaBootstrap]); b != "" {
			c.Producer[bootstrapServers] = b
		}
	}
	if c.Topic != "" && c.TolerateAll && c.Producer[bootstrapServers] == "" {
		return c, fmt.Errorf("%s is set but no broker is known: set %s%s or %s", KeyTopic, KeyProducerPrefix, bootstrapServers, KeyKafkaBootstrap)
	}
	return c, nil
}

func boolKey(cfg map[string]string, key string, def bool) (bool, error) {
	v := strings.TrimSpace(cfg[key])
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s: must be true or false, got %q", key, v)
	}
	return b, nil
}
