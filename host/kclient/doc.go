// Package kclient holds a distributed worker's Kafka client settings and
// the admin calls for its internal topics.
//
// # Settings
//
// [FromWorker] reads a worker config's bootstrap.servers and the worker's
// own client security keys (security.protocol, sasl.*, ssl.*: Kafka
// Connect's worker keys, whose names librdkafka shares) into a [Config].
// [Config.ConfigMap] turns it into confluent-kafka-go settings for a
// producer, consumer or admin client, plus per-use extras;
// [Config.NewProducer] and [Config.NewConsumer] build the clients and send
// librdkafka's logs to a slog logger ([LogAt] maps its syslog levels).
//
// Secrets (sasl.password, ssl.key.password, ssl.key.pem, JAAS and OAuth
// configs, …; see [IsSecret]) never appear in errors, logs or
// [Config.String]: their values are replaced by "[redacted]".
//
// # Internal topics
//
// [Admin.EnsureTopic] creates a missing internal topic compacted, with the
// partitions and replication factor its spec gives (the replication factor
// capped at the broker count, with a warning), and validates an existing
// one: a topic that is not compacted, or a config topic with more than one
// partition, is an error wrapping [ErrBadTopic] that names the topic, what
// was found and the fix.
//
// # Tests
//
// Package kclienttest finds the broker e2e/services/up started, for this
// package's tests and the stores'.
package kclient
