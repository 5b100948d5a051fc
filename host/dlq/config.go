package dlq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
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
	// KeyKafkaPrefix is the prefix of the source's librdkafka settings;
	// the ones that say how to connect are inherited (see ParseConfig).
	KeyKafkaPrefix = "kafka."
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
	// ConnectTimeout bounds connecting to the broker and creating the
	// topic, once per producer; 0 means DefaultConnectTimeout. Not a
	// connector key: tests shorten it.
	ConnectTimeout time.Duration
}

// DefaultConnectTimeout bounds connecting the dead-letter producer and
// creating its topic: past it, the Report that waits fails the task with
// the producer's last errors.
const DefaultConnectTimeout = 30 * time.Second

// inheritedExact and inheritedPrefixes are the librdkafka settings that
// say how to reach and authenticate to a cluster. The dead-letter producer
// takes them from the connector's kafka.* keys when it talks to the same
// cluster. Consumer-only settings (group.id, fetch.*, auto.offset.reset…)
// and client.id (the producer names itself) are not among them.
var (
	inheritedExact = []string{
		"security.protocol",
		"enable.ssl.certificate.verification",
		"enable.sasl.oauthbearer.unsecure.jwt",
		"client.dns.lookup",
		"broker.address.family",
		"broker.address.ttl",
		"connections.max.idle.ms",
		"api.version.request",
		"api.version.request.timeout.ms",
		"api.version.fallback.ms",
		"broker.version.fallback",
	}
	inheritedPrefixes = []string{"sasl.", "ssl.", "socket.", "reconnect.backoff."}
)

// inherited reports whether the librdkafka setting key (without the
// kafka. prefix) is about connecting, so the producer takes it too.
func inherited(key string) bool {
	if slices.Contains(inheritedExact, key) {
		return true
	}
	for _, p := range inheritedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// ParseConfig reads a connector's errors.* keys. Errors name the key.
//
// The producer's settings are the errors.deadletterqueue.producer.* keys.
// Without errors.deadletterqueue.producer.bootstrap.servers the producer
// talks to the source's cluster: it takes kafka.bootstrap.servers and the
// connector's kafka.* settings that say how to connect (security.protocol,
// sasl.*, ssl.*, socket.*, client.dns.lookup, …), so a SASL or TLS source
// has a dead-letter queue that reaches the same brokers. A producer.* key
// always wins over an inherited one. With its own bootstrap.servers the
// producer inherits nothing: it is another cluster.
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
		for k, v := range cfg {
			rest, ok := strings.CutPrefix(k, KeyKafkaPrefix)
			if !ok || !inherited(rest) {
				continue
			}
			if _, set := c.Producer[rest]; !set {
				c.Producer[rest] = v
			}
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
