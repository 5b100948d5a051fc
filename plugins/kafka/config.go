package kafka

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// Config keys. Names follow Kafka Connect and Confluent where they have
// one; librdkafka settings go through with the "kafka." prefix.
const (
	KeyTopics      = "topics"
	KeyTopicsRegex = "topics.regex"

	// KeyKafkaPrefix passes librdkafka consumer settings through:
	// "kafka.fetch.max.bytes" becomes librdkafka's "fetch.max.bytes".
	KeyKafkaPrefix          = "kafka."
	KeyBootstrapServers     = "kafka.bootstrap.servers"
	KeySecurityProtocol     = "kafka.security.protocol"
	KeySASLMechanisms       = "kafka.sasl.mechanisms"
	KeySASLUsername         = "kafka.sasl.username"
	KeySASLPassword         = "kafka.sasl.password"
	KeySSLCALocation        = "kafka.ssl.ca.location"
	KeySSLCertLocation      = "kafka.ssl.certificate.location"
	KeySSLKeyLocation       = "kafka.ssl.key.location"
	KeySSLKeyPassword       = "kafka.ssl.key.password"
	KeySSLKeyPEM            = "kafka.ssl.key.pem"
	KeySSLKeystorePassword  = "kafka.ssl.keystore.password"
	KeyOAuthBearerSecret    = "kafka.sasl.oauthbearer.client.secret"
	KeyConsumerGroupID      = "consumer.group.id"
	KeyAutoOffsetReset      = "consumer.auto.offset.reset"
	KeyStaticMembership     = "consumer.static.membership"
	KeyRegistryURL          = "schema.registry.url"
	KeyRegistryUserInfo     = "schema.registry.basic.auth.user.info"
	KeyRegistryCALocation   = "schema.registry.ssl.ca.location"
	KeyRegistryTruststore   = "schema.registry.ssl.truststore.location"
	KeyRegistryCertLocation = "schema.registry.ssl.certificate.location"
	KeyRegistryKeyLocation  = "schema.registry.ssl.key.location"
	KeyRegistryTimeout      = "schema.registry.request.timeout.ms"
	KeyRegistryRetryTimeout = "schema.registry.retry.timeout.ms"
	KeySubjectStrategy      = "value.subject.name.strategy"
	KeyValueFormat          = "value.format"
	KeyKeyFormat            = "key.format"
	KeyBatchSize            = "batch.size"
	KeyBatchLinger          = "batch.linger.ms"
	KeyBufferMaxBytes       = "buffer.max.bytes"
	KeyNullValues           = "behavior.on.null.values"
)

// KeyRegistryUnknownTimeout bounds the wait for a schema id the registry
// does not know (yet), before its records are dead-lettered.
const KeyRegistryUnknownTimeout = "schema.registry.unknown.timeout.ms"

// Values of key.format.
const (
	KeyFormatString = "string"
	KeyFormatBytes  = "bytes"
	KeyFormatAvro   = "avro"
)

// Values of behavior.on.null.values.
const (
	NullValuesFail   = "fail"
	NullValuesIgnore = "ignore"
	NullValuesDLQ    = "dlq"
)

// Defaults that code uses as well as the spec.
const (
	defaultBatchSize = 5000
	// The linger of an unset batch.linger.ms: a third of the commit
	// interval, within these bounds (defaultLinger when the host gave no
	// interval).
	defaultLinger         = 100 * time.Millisecond
	maxLinger             = 500 * time.Millisecond
	defaultBufferMaxBytes = 64 << 20
	maxBatchSize          = 1_000_000
	minBufferMaxBytes     = 64 << 10
)

// managedKafkaKeys are librdkafka settings the plugin sets itself: a
// "kafka."-prefixed override would break rebalancing, positions or
// commits. The value says which key to use instead, if any.
var managedKafkaKeys = map[string]string{
	"group.id":                        KeyConsumerGroupID,
	"group.instance.id":               KeyStaticMembership,
	"auto.offset.reset":               KeyAutoOffsetReset,
	"enable.auto.commit":              "",
	"enable.auto.offset.store":        "",
	"enable.partition.eof":            "",
	"go.application.rebalance.enable": "",
	"go.events.channel.enable":        "",
	"go.logs.channel.enable":          "",
	"go.logs.channel":                 "",
}

// spec declares the kafka source's config.
func spec() sdk.Spec {
	const (
		gTopics   = "Topics"
		gKafka    = "Kafka"
		gRegistry = "Schema Registry"
		gRecords  = "Records"
	)
	return sdk.NewSpec(
		sdk.List(KeyTopics).InGroup(gTopics).Rank(sdk.High).WithExample("orders,payments").
			Describe("Topics to read, comma separated. Set exactly one of topics and topics.regex."),
		sdk.String(KeyTopicsRegex).InGroup(gTopics).Rank(sdk.High).WithExample("orders-.*").Check(checkRegex).
			Describe("Regular expression matched against whole topic names (as Kafka Connect does); topics created later that match are picked up at the next metadata refresh (kafka.topic.metadata.refresh.interval.ms, 5 min by default). Set exactly one of topics and topics.regex."),

		sdk.String(KeyBootstrapServers).Require().InGroup(gKafka).Rank(sdk.High).WithExample("broker1:9092,broker2:9092").
			Describe("Kafka brokers to bootstrap from, host:port, comma separated."),
		sdk.Prefix(KeyKafkaPrefix).InGroup(gKafka).WithExample("kafka.fetch.max.bytes").
			Describe("Any librdkafka consumer setting, prefixed with \"kafka.\" (see librdkafka's CONFIGURATION.md). The plugin sets group.id (consumer.group.id), auto.offset.reset (consumer.auto.offset.reset), enable.auto.commit and enable.auto.offset.store itself; it also defaults partition.assignment.strategy to cooperative-sticky, client.id to floe-<connector>-<task>, session.timeout.ms to 10000, reconnect.backoff.max.ms to 1000, fetch.min.bytes to 262144 with fetch.wait.max.ms 100 (fewer, fuller fetches at modest rates), fetch.queue.backoff.ms to 100 (librdkafka waits 1 s to fetch a partition whose queue filled) and queued.max.messages.kbytes to half of buffer.max.bytes; group.instance.id follows consumer.static.membership."),
		sdk.String(KeySecurityProtocol).InGroup(gKafka).OneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "plaintext", "ssl", "sasl_plaintext", "sasl_ssl").
			Describe("Protocol to talk to brokers: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL."),
		sdk.String(KeySASLMechanisms).InGroup(gKafka).WithExample("SCRAM-SHA-256").
			Describe("SASL mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI."),
		sdk.String(KeySASLUsername).InGroup(gKafka).
			Describe("SASL username for PLAIN and SCRAM."),
		sdk.Password(KeySASLPassword).InGroup(gKafka).
			Describe("SASL password for PLAIN and SCRAM."),
		sdk.Password(KeyOAuthBearerSecret).InGroup(gKafka).
			Describe("Client secret for SASL OAUTHBEARER with sasl.oauthbearer.method=oidc."),
		sdk.String(KeySSLCALocation).InGroup(gKafka).WithExample("/etc/ssl/kafka-ca.pem").
			Describe("PEM file of the CA certificates that signed the brokers' certificates."),
		sdk.String(KeySSLCertLocation).InGroup(gKafka).
			Describe("PEM client certificate, for brokers that require TLS client authentication."),
		sdk.String(KeySSLKeyLocation).InGroup(gKafka).
			Describe("PEM private key of the client certificate."),
		sdk.Password(KeySSLKeyPassword).InGroup(gKafka).
			Describe("Password of the client private key."),
		sdk.Password(KeySSLKeyPEM).InGroup(gKafka).
			Describe("Client private key as PEM text, instead of kafka.ssl.key.location."),
		sdk.Password(KeySSLKeystorePassword).InGroup(gKafka).
			Describe("Password of a PKCS#12 keystore (kafka.ssl.keystore.location)."),

		sdk.String(KeyConsumerGroupID).InGroup(gKafka).Rank(sdk.High).
			Describe("Consumer group of the connector's tasks. Default: connect-<connector name>, as Kafka Connect names its sink connectors' groups, so Connect tooling finds it. floe commits the group's offsets after each checkpoint, for monitoring; the Iceberg table holds the truth."),
		sdk.Bool(KeyStaticMembership).Default("true").InGroup(gKafka).
			Describe("Each task joins the group as a static member (KIP-345; group.instance.id floe-<connector>-<task>-<digest of the host name, the data dir and the subscription>), so a task restarted on the same worker after a crash or a kill -9 takes its partitions back at once instead of waiting for the old member's session timeout and a rebalance. A task that closes leaves the group all the same (it unsubscribes first), so its partitions move at once; those of a task that died move after kafka.session.timeout.ms (10 s by default here) unless it comes back first, and a task that holds no partition for three session timeouts while its topics have one per task joins the group again (a process killed inside a rebalance leaves its successors an assignment with partitions read by nobody). false: dynamic members, which a crashed task's successor does not replace, so its partitions wait for the session timeout."),
		sdk.String(KeyAutoOffsetReset).Default("earliest").OneOf("earliest", "latest").InGroup(gKafka).
			Describe("Where a partition starts when neither floe (the sink's committed positions) nor the consumer group has a position for it: earliest or latest."),

		sdk.String(KeyRegistryURL).InGroup(gRegistry).Rank(sdk.High).WithExample("http://localhost:8081").
			Describe("Schema Registry base URL, including any path prefix (Apicurio: .../apis/ccompat/v7). Required for Avro values."),
		sdk.Password(KeyRegistryUserInfo).InGroup(gRegistry).WithExample("user:password").
			Describe("Basic auth credentials for the registry, user:password."),
		sdk.String(KeyRegistryCALocation).InGroup(gRegistry).
			Describe("PEM file of the CAs to trust for an https registry URL (instead of the system's)."),
		sdk.String(KeyRegistryTruststore).InGroup(gRegistry).
			Describe("Alias of schema.registry.ssl.ca.location for Confluent configs; must be a PEM file (JKS and PKCS#12 truststores are not read)."),
		sdk.String(KeyRegistryCertLocation).InGroup(gRegistry).
			Describe("PEM client certificate for mutual TLS with the registry."),
		sdk.String(KeyRegistryKeyLocation).InGroup(gRegistry).
			Describe("PEM private key of the registry client certificate."),
		sdk.Duration(KeyRegistryTimeout).Default("10000").InGroup(gRegistry).Check(positiveDuration).
			Describe("Timeout of one registry request (milliseconds or a Go duration)."),
		sdk.Duration(KeyRegistryRetryTimeout).Default("300000").InGroup(gRegistry).Check(positiveDuration).
			Describe("How long a task keeps retrying an unreachable or failing registry (with backoff, logging each failure) before it fails; records are never dead-lettered for it."),
		sdk.Duration(KeyRegistryUnknownTimeout).Default("60000").InGroup(gRegistry).Check(nonNegativeDuration).
			Describe("How long a record whose schema id the registry does not know waits for it (the id is asked again with backoff: a registry restarted with empty storage, replication lag) before it goes to the dead-letter queue (errors.tolerance=all) or fails the task (none). The id is still asked again afterwards, so registering the schema heals the records after it. 0 dead-letters at once."),
		sdk.String(KeySubjectStrategy).Default(schemas.TopicNameStrategy).InGroup(gRegistry).Check(checkStrategy).
			Describe("Subject name strategy the producers use: TopicNameStrategy (<topic>-value), RecordNameStrategy (<record full name>) or TopicRecordNameStrategy (<topic>-<record full name>), or Confluent's class name for one. Records are decoded by the schema id they carry whatever the strategy; it names the subject reported with each schema."),

		sdk.String(KeyValueFormat).Default("avro").OneOf("avro").InGroup(gRecords).
			Describe("Format of record values: avro (Confluent wire format: magic byte 0, schema id, Avro binary)."),
		sdk.String(KeyKeyFormat).Default(KeyFormatString).OneOf(KeyFormatString, KeyFormatAvro, KeyFormatBytes).InGroup(gRecords).
			Describe("Format of record keys, for the __key column: string and bytes keep the key's bytes as they are; avro expects the Confluent wire format and keeps the Avro payload after its 5-byte header (a key without that header is a bad record). Keys are not decoded."),
		sdk.Int(KeyBatchSize).Default(strconv.Itoa(defaultBatchSize)).Min(1).Max(maxBatchSize).InGroup(gRecords).
			Describe("Most records per batch. A batch holds one partition's consecutive records of one schema; a schema change starts a new one."),
		sdk.Duration(KeyBatchLinger).InGroup(gRecords).Check(nonNegativeDuration).WithExample("300").
			Describe(fmt.Sprintf("How long a partition's partial batch waits for more records before it is handed on (milliseconds or a Go duration). "+
				"Unset: a third of the connector's commit interval, between %d ms and %d ms (333 ms at 1 s commits, %d ms at the default 10 s): "+
				"a record reaches the table at the next commit whatever its batch, and each batch costs every process it crosses a wake-up, so at 20,000 records/s with 1 s commits 333 ms takes a third less CPU than 100 ms. "+
				"0 hands records on at once.", defaultLinger.Milliseconds(), maxLinger.Milliseconds(), maxLinger.Milliseconds())),
		sdk.Long(KeyBufferMaxBytes).Min(minBufferMaxBytes).InGroup(gRecords).WithExample(strconv.Itoa(defaultBufferMaxBytes)).
			Describe("Bytes of records a task buffers before it pauses its partitions (it stays in the group and keeps polling); they resume once the buffer drains below half. "+
				"Unset: 64 MiB, or less to fit the process's share of the worker's memory.max.bytes (a third of it, split over the tasks)."),
		sdk.String(KeyNullValues).Default(NullValuesDLQ).OneOf(NullValuesDLQ, NullValuesIgnore, NullValuesFail).InGroup(gRecords).
			Describe("What to do with a record whose value is null (a tombstone): dlq treats it as a bad record, so it goes to the dead-letter queue or fails the task as errors.tolerance says; ignore skips it (counted as skipped, logged at debug); fail fails the task, naming the record."),
	).WithCheck(checkSettings)
}

// checkSettings is the spec's whole-config check: the rules between keys
// that readSettings enforces, so config/validate reports them instead of
// the task's Open.
func checkSettings(cfg sdk.Config) error {
	_, err := readSettings(cfg, "", 0)
	return err
}

func checkRegex(v string) error {
	if _, err := regexp.Compile(v); err != nil {
		return fmt.Errorf("not a valid regular expression: %w", err)
	}
	return nil
}

func checkStrategy(v string) error {
	if _, err := schemas.Subject(v, "t", "ns.r", false); err != nil {
		return err
	}
	return nil
}

func positiveDuration(v string) error {
	if d, err := sdk.ParseDuration(v); err == nil && d <= 0 {
		return errors.New("must be greater than 0")
	}
	return nil
}

func nonNegativeDuration(v string) error {
	if d, err := sdk.ParseDuration(v); err == nil && d < 0 {
		return errors.New("must not be negative")
	}
	return nil
}

// settings is a task's validated config.
type settings struct {
	topics      []string
	topicsRegex string // librdkafka subscription pattern ("^…$"), or ""
	groupID     string
	static      bool   // static group membership (group.instance.id)
	autoReset   string // "earliest" or "latest"
	kafka       ckafka.ConfigMap

	registry       schemas.RegistryConfig
	retryTimeout   time.Duration
	unknownTimeout time.Duration

	keyFormat  string
	batchSize  int
	linger     time.Duration
	maxBytes   int64
	nullValues string
}

// parseSettings validates a connector's config against the spec (fields,
// then checkSettings) and returns the task's settings. Errors name the key
// and say what to change; errors.As finds an sdk.ConfigError for each.
func parseSettings(raw sdk.Config, connector string, task int) (settings, error) {
	cfg, err := spec().Parse(raw.Map())
	if err != nil {
		return settings{}, err
	}
	return readSettings(cfg, connector, task)
}

// readSettings reads cfg, whose fields passed their own checks and which
// has the spec's defaults, and checks the rules between keys. Each problem
// is an sdk.KeyError naming the key to change; several are joined.
func readSettings(cfg sdk.Config, connector string, task int) (settings, error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, sdk.KeyError(key, format, args...))
	}
	r := cfg.Reader()
	s := settings{
		topics:     cfg.List(KeyTopics),
		groupID:    strings.TrimSpace(cfg.String(KeyConsumerGroupID)),
		static:     r.Bool(KeyStaticMembership),
		autoReset:  cfg.String(KeyAutoOffsetReset),
		keyFormat:  cfg.String(KeyKeyFormat),
		batchSize:  r.Int(KeyBatchSize),
		linger:     lingerOf(cfg),
		maxBytes:   r.Int64(KeyBufferMaxBytes),
		nullValues: cfg.String(KeyNullValues),
	}
	if s.maxBytes == 0 {
		s.maxBytes = defaultBufferMaxBytes // fitMemory may lower it
	}
	regex := strings.TrimSpace(cfg.String(KeyTopicsRegex))
	switch {
	case len(s.topics) > 0 && regex != "":
		bad(KeyTopics, "%s is set too: set exactly one of %s and %s", KeyTopicsRegex, KeyTopics, KeyTopicsRegex)
	case len(s.topics) == 0 && regex == "":
		bad(KeyTopics, "set %s or %s (exactly one of them)", KeyTopics, KeyTopicsRegex)
	case regex != "":
		s.topicsRegex = subscriptionPattern(regex)
	}
	for _, t := range s.topics {
		if strings.HasPrefix(t, "^") {
			bad(KeyTopics, "%q looks like a regular expression; put patterns in %s", t, KeyTopicsRegex)
		}
	}
	if s.groupID == "" {
		s.groupID = "connect-" + connector
	}
	if strings.TrimSpace(cfg.String(KeyBootstrapServers)) == "" {
		bad(KeyBootstrapServers, "empty: set the brokers to bootstrap from, host:port")
	}

	km, err := kafkaConfig(cfg, s, connector, task)
	if err != nil {
		errs = append(errs, err)
	}
	s.kafka = km

	url := strings.TrimSpace(cfg.String(KeyRegistryURL))
	if url == "" {
		bad(KeyRegistryURL, "not set: %s=avro needs a Schema Registry (e.g. http://localhost:8081)", KeyValueFormat)
	}
	s.registry = schemas.RegistryConfig{
		URL:             url,
		CAFile:          strings.TrimSpace(cfg.String(KeyRegistryCALocation)),
		CertFile:        strings.TrimSpace(cfg.String(KeyRegistryCertLocation)),
		KeyFile:         strings.TrimSpace(cfg.String(KeyRegistryKeyLocation)),
		SubjectStrategy: cfg.String(KeySubjectStrategy),
		Timeout:         r.Duration(KeyRegistryTimeout),
	}
	if ts := strings.TrimSpace(cfg.String(KeyRegistryTruststore)); ts != "" {
		if s.registry.CAFile != "" && s.registry.CAFile != ts {
			bad(KeyRegistryTruststore, "names another file than %s: set one of them", KeyRegistryCALocation)
		}
		s.registry.CAFile = ts
	}
	if ui := cfg.String(KeyRegistryUserInfo); ui != "" {
		user, pass, ok := strings.Cut(ui, ":")
		if !ok || user == "" {
			bad(KeyRegistryUserInfo, "must be user:password")
		}
		s.registry.Username, s.registry.Password = user, pass
	}
	s.retryTimeout = r.Duration(KeyRegistryRetryTimeout)
	s.unknownTimeout = r.Duration(KeyRegistryUnknownTimeout)
	if err := r.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return settings{}, errors.Join(errs...)
	}
	return s, nil
}

// staticMemberID names a task's static group member: the task, then a
// digest of the worker (host name and data dir) and of the subscription.
// The same task restarted on the same worker rejoins under the same id
// and takes its partitions back at once. Another worker running the task
// (a standby taking over, a zombie waking up) joins as another member
// instead of fencing the one that runs it. A changed subscription gets a
// new member too: the broker hands a rejoining static member its old
// assignment without a rebalance, which would be the old topics'.
func staticMemberID(member, dataDir string, s settings) string {
	host, _ := os.Hostname()
	h := sha256.New()
	for _, part := range append([]string{host, dataDir, s.topicsRegex}, slices.Sorted(slices.Values(s.topics))...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%s-%x", member, h.Sum(nil)[:4])
}

// subscriptionPattern turns a topics.regex (a Java pattern matched against
// whole topic names) into a librdkafka subscription, which is a regex when
// it starts with "^" and otherwise matches anywhere in the name.
func subscriptionPattern(regex string) string {
	r := strings.TrimPrefix(regex, "^")
	r = strings.TrimSuffix(r, "$")
	return "^(" + r + ")$"
}

// kafkaConfig builds the librdkafka consumer config: the user's "kafka."
// settings, then the ones floe manages. Its errors are sdk.KeyErrors on
// the offending "kafka." keys, joined.
func kafkaConfig(cfg sdk.Config, s settings, connector string, task int) (ckafka.ConfigMap, error) {
	km := ckafka.ConfigMap{}
	var errs []error
	user := cfg.Prefixed(KeyKafkaPrefix)
	for _, k := range slices.Sorted(maps.Keys(user)) {
		if use, ok := managedKafkaKeys[k]; ok {
			if use != "" {
				errs = append(errs, sdk.KeyError(KeyKafkaPrefix+k, "set %s instead", use))
			} else {
				errs = append(errs, sdk.KeyError(KeyKafkaPrefix+k, "floe manages this consumer setting (offsets follow the sink's checkpoints); remove it"))
			}
			continue
		}
		km[k] = user[k]
	}
	setDefault := func(k string, v ckafka.ConfigValue) {
		if _, ok := km[k]; !ok {
			km[k] = v
		}
	}
	member := fmt.Sprintf("floe-%s-%d", connector, task)
	setDefault("client.id", member)
	if s.static {
		km["group.instance.id"] = staticMemberID(member, cfg.String(sdk.KeyDataDir), s)
	}
	// A broker that comes back is found within a second, not after
	// librdkafka's 10 s backoff ceiling.
	setDefault("reconnect.backoff.max.ms", 1000)
	if proto, _ := km["group.protocol"].(string); !strings.EqualFold(proto, "consumer") {
		// KIP-848's protocol assigns on the broker and refuses these.
		setDefault("partition.assignment.strategy", "cooperative-sticky")
		// A member that crashed without a restart (a worker gone for
		// good, a shrunk tasks.max with static members) hands its
		// partitions on after this, not librdkafka's 45 s.
		setDefault("session.timeout.ms", 10000)
	}
	// librdkafka's own prefetch queue (64 MiB by default) comes on top of
	// the task's buffer; keep it in proportion.
	setDefault("queued.max.messages.kbytes", int(max(s.maxBytes/2/1024, 1024)))
	// A fetch returns once it has a quarter MiB or waited 100 ms: a topic
	// written at a modest rate (a producer's linger apart) would otherwise
	// be fetched as fast as the broker answers, a few records a fetch,
	// waking librdkafka's threads, then the poll goroutine and Read,
	// hundreds of times a second. A backlog fills every fetch at once,
	// and 100 ms is little next to a checkpoint.
	setDefault("fetch.min.bytes", 256<<10)
	setDefault("fetch.wait.max.ms", 100)
	// A partition whose prefetched records reach librdkafka's queue
	// limits (queued.max.messages.kbytes, queued.min.messages) is not
	// fetched again for fetch.queue.backoff.ms, 1 s by default. In a
	// backlog that is the steady state: the queue refills faster than
	// the buffer drains, and the task idled up to a second each time.
	// BenchmarkConsume/task on 1 M records: 139 k records/s with the
	// default, 711 k with 100 ms (66 k and 432 k with the 15 MB buffer
	// a memory budget gives), the same CPU per record.
	setDefault("fetch.queue.backoff.ms", 100)
	km["group.id"] = s.groupID
	km["auto.offset.reset"] = s.autoReset
	km["enable.auto.commit"] = false
	km["enable.auto.offset.store"] = false
	km["enable.partition.eof"] = false
	km["go.logs.channel.enable"] = true
	if strategy, _ := km["partition.assignment.strategy"].(string); strategy != "" && strings.TrimSpace(strategy) != "cooperative-sticky" {
		// Eager assignors revoke everything at every rebalance; the
		// incremental handling here needs the cooperative protocol.
		errs = append(errs, sdk.KeyError(KeyKafkaPrefix+"partition.assignment.strategy",
			"%s: the kafka source needs cooperative-sticky (incremental rebalancing); remove the setting", strategy))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return km, nil
}

// lingerOf is batch.linger.ms, or when it is unset a third of the
// connector's commit interval (sdk.KeyCommitInterval) between
// defaultLinger and maxLinger.
func lingerOf(cfg sdk.Config) time.Duration {
	if v, ok := cfg.Get(KeyBatchLinger); ok && strings.TrimSpace(v) != "" {
		d, _ := cfg.Duration(KeyBatchLinger)
		return d
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(cfg.String(sdk.KeyCommitInterval)), 10, 64)
	if err != nil || ms <= 0 {
		return defaultLinger
	}
	return min(max(time.Duration(ms/3)*time.Millisecond, defaultLinger), maxLinger)
}
