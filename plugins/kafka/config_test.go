package kafka

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

func minimalConfig() map[string]string {
	return map[string]string{
		KeyTopics:           "orders",
		KeyBootstrapServers: "127.0.0.1:9092",
		KeyRegistryURL:      "http://127.0.0.1:8081",
	}
}

func TestSettingsDefaults(t *testing.T) {
	s, err := parseSettings(sdk.NewConfig(minimalConfig()), "orders-to-iceberg", 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.groupID != "connect-orders-to-iceberg" {
		t.Errorf("group %q, want Kafka Connect's connect-<connector>", s.groupID)
	}
	if s.batchSize != defaultBatchSize || s.linger != defaultLinger || s.maxBytes != defaultBufferMaxBytes ||
		s.keyFormat != KeyFormatString || s.nullValues != NullValuesDLQ || s.autoReset != "earliest" {
		t.Errorf("defaults: %+v", s)
	}
	want := map[string]any{
		"bootstrap.servers":             "127.0.0.1:9092",
		"group.id":                      "connect-orders-to-iceberg",
		"partition.assignment.strategy": "cooperative-sticky",
		"enable.auto.commit":            false,
		"enable.auto.offset.store":      false,
		"auto.offset.reset":             "earliest",
		"client.id":                     "floe-orders-to-iceberg-2",
		"session.timeout.ms":            10000,
		"reconnect.backoff.max.ms":      1000,
		"queued.max.messages.kbytes":    32768,
		"fetch.min.bytes":               256 << 10,
		"fetch.wait.max.ms":             100,
		"fetch.queue.backoff.ms":        100,
	}
	for k, v := range want {
		if s.kafka[k] != v {
			t.Errorf("librdkafka %s = %v, want %v", k, s.kafka[k], v)
		}
	}
}

// Every problem is named by its key, with what to do, both at Open
// (parseSettings) and in the spec's validation (config/validate), which
// shows it under that key.
func TestSettingsErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(map[string]string)
		key  string // the key validation shows the error under
		want []string
	}{
		{"both topic keys", func(c map[string]string) { c[KeyTopicsRegex] = "orders-.*" }, KeyTopics, []string{KeyTopics, KeyTopicsRegex, "exactly one"}},
		{"no topic key", func(c map[string]string) { delete(c, KeyTopics) }, KeyTopics, []string{KeyTopics, KeyTopicsRegex, "exactly one"}},
		{"bad regex", func(c map[string]string) { delete(c, KeyTopics); c[KeyTopicsRegex] = "orders-(" }, KeyTopicsRegex, []string{KeyTopicsRegex}},
		{"no bootstrap", func(c map[string]string) { delete(c, KeyBootstrapServers) }, KeyBootstrapServers, []string{KeyBootstrapServers}},
		{"blank bootstrap", func(c map[string]string) { c[KeyBootstrapServers] = " " }, KeyBootstrapServers, []string{KeyBootstrapServers, "host:port"}},
		{"no registry", func(c map[string]string) { delete(c, KeyRegistryURL) }, KeyRegistryURL, []string{KeyRegistryURL}},
		{"managed group id", func(c map[string]string) { c["kafka.group.id"] = "x" }, "kafka.group.id", []string{"kafka.group.id", KeyConsumerGroupID}},
		{"managed instance id", func(c map[string]string) { c["kafka.group.instance.id"] = "x" }, "kafka.group.instance.id", []string{"kafka.group.instance.id", KeyStaticMembership}},
		{"managed auto commit", func(c map[string]string) { c["kafka.enable.auto.commit"] = "true" }, "kafka.enable.auto.commit", []string{"kafka.enable.auto.commit", "remove it"}},
		{"eager assignor", func(c map[string]string) { c["kafka.partition.assignment.strategy"] = "range" }, "kafka.partition.assignment.strategy", []string{"kafka.partition.assignment.strategy", "cooperative-sticky"}},
		{"bad reset", func(c map[string]string) { c[KeyAutoOffsetReset] = "none" }, KeyAutoOffsetReset, []string{KeyAutoOffsetReset}},
		{"bad key format", func(c map[string]string) { c[KeyKeyFormat] = "json" }, KeyKeyFormat, []string{KeyKeyFormat}},
		{"bad strategy", func(c map[string]string) { c[KeySubjectStrategy] = "FooStrategy" }, KeySubjectStrategy, []string{KeySubjectStrategy}},
		{"user info", func(c map[string]string) { c[KeyRegistryUserInfo] = "nopassword" }, KeyRegistryUserInfo, []string{KeyRegistryUserInfo, "user:password"}},
		{"truststore", func(c map[string]string) { c[KeyRegistryCALocation] = "/a.pem"; c[KeyRegistryTruststore] = "/b.pem" }, KeyRegistryTruststore, []string{KeyRegistryTruststore, KeyRegistryCALocation}},
		{"batch size", func(c map[string]string) { c[KeyBatchSize] = "0" }, KeyBatchSize, []string{KeyBatchSize}},
		{"regex in topics", func(c map[string]string) { c[KeyTopics] = "^orders-.*" }, KeyTopics, []string{KeyTopics, KeyTopicsRegex}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := minimalConfig()
			c.edit(cfg)
			_, err := parseSettings(sdk.NewConfig(cfg), "c", 0)
			if err == nil {
				t.Fatalf("accepted %v", cfg)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var ce sdk.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %q holds no sdk.ConfigError", err)
			}
			errs := spec().Validate(cfg)
			if len(errs) != 1 || errs[0].Key != c.key {
				t.Errorf("validation reports %q, want one error under %s", errs, c.key)
			}
		})
	}
}

// The e2e case: a connector config without topics or topics.regex is
// refused by validation, under topics, rather than at the task's Open; and
// every problem is reported at once.
func TestValidateNeedsTopics(t *testing.T) {
	cfg := minimalConfig()
	delete(cfg, KeyTopics)
	cfg["name"], cfg["connector.class"], cfg["source"] = "x", "iceberg", "kafka"
	errs := spec().Validate(cfg)
	if len(errs) != 1 || errs[0].Error() != "topics: set topics or topics.regex (exactly one of them)" {
		t.Fatalf("validation = %q; want topics: set topics or topics.regex …", errs)
	}
	delete(cfg, KeyRegistryURL)
	cfg["kafka.group.id"] = "g"
	errs = spec().Validate(cfg)
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.Key)
	}
	if want := []string{KeyTopics, "kafka.group.id", KeyRegistryURL}; !slices.Equal(keys, want) {
		t.Fatalf("validation reports %q; want errors under %v", errs, want)
	}
}

func TestSettingsPassThrough(t *testing.T) {
	cfg := minimalConfig()
	delete(cfg, KeyTopics)
	cfg[KeyTopicsRegex] = "orders-.*"
	cfg[KeySecurityProtocol] = "SASL_SSL"
	cfg[KeySASLMechanisms] = "SCRAM-SHA-256"
	cfg[KeySASLUsername] = "u"
	cfg[KeySASLPassword] = "p"
	cfg["kafka.fetch.max.bytes"] = "1048576"
	cfg[KeyRegistryUserInfo] = "reg:secret:with:colons"
	cfg[KeyRegistryTruststore] = "/etc/ca.pem"
	cfg[KeySubjectStrategy] = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	cfg[KeyConsumerGroupID] = "my-group"
	s, err := parseSettings(sdk.NewConfig(cfg), "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.topicsRegex != "^(orders-.*)$" {
		t.Errorf("subscription %q, want the whole-name pattern ^(orders-.*)$", s.topicsRegex)
	}
	for k, v := range map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "u",
		"sasl.password": "p", "fetch.max.bytes": "1048576", "group.id": "my-group"} {
		if s.kafka[k] != v {
			t.Errorf("librdkafka %s = %v, want %v", k, s.kafka[k], v)
		}
	}
	if s.registry.Username != "reg" || s.registry.Password != "secret:with:colons" || s.registry.CAFile != "/etc/ca.pem" {
		t.Errorf("registry config %+v", s.registry)
	}
}

// A task's static member id stays the same for the same task on the same
// worker with the same subscription, and changes with any of them: a
// standby worker must not fence the running one, and a new subscription
// must not get the old one's cached assignment.
func TestStaticMemberID(t *testing.T) {
	id := func(dataDir string, task int, edit func(map[string]string)) string {
		t.Helper()
		cfg := minimalConfig()
		cfg[sdk.KeyDataDir] = dataDir
		if edit != nil {
			edit(cfg)
		}
		s, err := parseSettings(sdk.NewConfig(cfg), "orders", task)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := s.kafka["group.instance.id"].(string)
		return v
	}
	base := id("/var/lib/floe", 2, nil)
	if !strings.HasPrefix(base, "floe-orders-2-") || base != id("/var/lib/floe", 2, nil) {
		t.Fatalf("id %q: want floe-orders-2-<digest>, the same every time", base)
	}
	for what, other := range map[string]string{
		"another task":      id("/var/lib/floe", 1, nil),
		"another worker":    id("/srv/floe", 2, nil),
		"another topic":     id("/var/lib/floe", 2, func(c map[string]string) { c[KeyTopics] = "refunds" }),
		"a pattern instead": id("/var/lib/floe", 2, func(c map[string]string) { delete(c, KeyTopics); c[KeyTopicsRegex] = "orders" }),
	} {
		if other == base {
			t.Errorf("%s: the same id %q", what, base)
		}
	}
}

// Without static membership no group.instance.id is set; under KIP-848's
// protocol the session timeout is the broker's, so none is set either.
func TestDynamicMembership(t *testing.T) {
	cfg := minimalConfig()
	cfg[KeyStaticMembership] = "false"
	cfg["kafka.group.protocol"] = "consumer"
	s, err := parseSettings(sdk.NewConfig(cfg), "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"group.instance.id", "session.timeout.ms", "partition.assignment.strategy"} {
		if v, ok := s.kafka[k]; ok {
			t.Errorf("librdkafka %s = %v, want it unset", k, v)
		}
	}
}

// Keys holding secrets are declared as passwords, so the API and logs
// never show them.
func TestSecretsDeclared(t *testing.T) {
	sp := spec()
	for _, k := range []string{KeySASLPassword, KeySSLKeyPassword, KeySSLKeystorePassword, KeySSLKeyPEM, KeyOAuthBearerSecret, KeyRegistryUserInfo} {
		f, ok := sp.Lookup(k)
		if !ok || !f.Secret || f.Type != sdk.TypePassword || f.Prefix {
			t.Errorf("%s: declared %v, secret %v, type %s; want its own Password field", k, ok, f.Secret, f.Type)
		}
	}
	if f, ok := sp.Lookup("kafka.fetch.max.bytes"); !ok || !f.Prefix {
		t.Errorf("kafka.* keys are not accepted by the prefix field")
	}
}

// TestFitMemory: with the host's memory share, the unset buffers shrink to
// fit it (split over the tasks), what the user set stays, and the Go heap
// limit leaves librdkafka's queues out; without a share nothing changes.
func TestFitMemory(t *testing.T) {
	parse := func(extra map[string]string) (settings, sdk.Config) {
		t.Helper()
		raw := minimalConfig()
		for k, v := range extra {
			raw[k] = v
		}
		cfg := sdk.NewConfig(raw)
		s, err := parseSettings(cfg, "c", 0)
		if err != nil {
			t.Fatal(err)
		}
		return s, cfg
	}
	s, cfg := parse(nil)
	if limit := s.fitMemory(cfg, 2); limit != 0 || s.maxBytes != defaultBufferMaxBytes {
		t.Errorf("no budget: limit %d, buffer %d", limit, s.maxBytes)
	}

	const share = 160 << 20
	s, cfg = parse(map[string]string{sdk.KeyMemoryBytes: "167772160"})
	limit := s.fitMemory(cfg, 2)
	buf := int64(share * bufferPart / 2)
	if s.maxBytes != buf || s.kafka["queued.max.messages.kbytes"] != int(buf/4/1024) || s.kafka["fetch.max.bytes"] != int(buf/2) {
		t.Errorf("budget %d over 2 tasks: buffer %d (want %d), queue %v KiB, fetch %v", share, s.maxBytes, buf, s.kafka["queued.max.messages.kbytes"], s.kafka["fetch.max.bytes"])
	}
	if want := share - 2*buf; limit != want {
		t.Errorf("Go limit %d, want the share less two tasks' librdkafka queues and fetches, %d", limit, want)
	}

	s, cfg = parse(map[string]string{sdk.KeyMemoryBytes: "167772160", KeyBufferMaxBytes: "8388608", "kafka.queued.max.messages.kbytes": "2048"})
	limit = s.fitMemory(cfg, 1)
	// 2 MiB of payload in librdkafka's queue are 4 MiB of memory.
	if s.maxBytes != 8<<20 || s.kafka["queued.max.messages.kbytes"] != "2048" || limit != share-(4<<20)-(4<<20) {
		t.Errorf("the user's settings: buffer %d, queue %v, limit %d", s.maxBytes, s.kafka["queued.max.messages.kbytes"], limit)
	}
}

// TestLingerFollowsTheCommitInterval: an unset batch.linger.ms is a third
// of the commit interval the host passes, within [100 ms, 500 ms]; a set one
// (0 included) is kept.
func TestLingerFollowsTheCommitInterval(t *testing.T) {
	for _, c := range []struct {
		linger, interval string
		want             time.Duration
	}{
		{"", "1000", 333 * time.Millisecond},
		{"", "300", defaultLinger},
		{"", "10000", maxLinger},
		{"", "", defaultLinger},
		{"50", "1000", 50 * time.Millisecond},
		{"0", "1000", 0},
		{" ", "1200", 400 * time.Millisecond},
	} {
		cfg := minimalConfig()
		if c.linger != "" {
			cfg[KeyBatchLinger] = c.linger
		}
		if c.interval != "" {
			cfg[sdk.KeyCommitInterval] = c.interval
		}
		s, err := parseSettings(sdk.NewConfig(cfg), "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		if s.linger != c.want {
			t.Errorf("batch.linger.ms %q at a commit interval of %q ms: linger %s, want %s", c.linger, c.interval, s.linger, c.want)
		}
	}
}
