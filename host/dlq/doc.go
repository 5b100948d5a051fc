// Package dlq sends records a connector cannot write to a Kafka
// dead-letter topic, the way Kafka Connect does.
//
// # Behaviour
//
// With errors.tolerance=none, [Reporter.Report] returns an error naming the
// first record's partition, offset, stage and reason: the source task must
// fail with it. With errors.tolerance=all, records go to the topic
// errors.deadletterqueue.topic.name (created on first use, one partition,
// replication factor errors.deadletterqueue.topic.replication.factor capped
// at the broker count), with Connect's __connect.errors.* context headers
// when errors.deadletterqueue.context.headers.enable is true. Without a
// topic they are only logged and counted, as Connect does.
//
// Report returns only after the broker acknowledged every record (or ctx
// ended): a record the source skips is never lost in a producer buffer.
//
// # Producer settings
//
// Keys errors.deadletterqueue.producer.* are handed to librdkafka with the
// prefix removed. Without errors.deadletterqueue.producer.bootstrap.servers
// the producer talks to the source's cluster: bootstrap.servers is the
// connector's kafka.bootstrap.servers, and the connector's kafka.* settings
// that say how to connect (security.protocol, sasl.*, ssl.*, socket.*,
// client.dns.lookup, …) come along, so a SASL or TLS source gets a
// dead-letter queue that reaches the same brokers. A producer.* key wins
// over an inherited one; with its own bootstrap.servers the producer
// inherits nothing. librdkafka's log lines go to the connector's logger.
//
// # Failures
//
// Connecting and creating the topic is bounded by 30 s
// ([DefaultConnectTimeout]), whatever the deadline of the Report that
// started it; a Report whose ctx ends first returns, and the next one waits
// for the same attempt, so a slow broker costs retries, not failures. When
// the attempt or a delivery fails, the error names the topic and the
// producer's last errors ("… 1/1 brokers are down", "SASL authentication
// error …"), and the source task fails with it. When the brokers refused
// the producer (its credentials, its SASL mechanism, or an ACL on the
// topic or the cluster) the error is marked sdk.Permanent: the restart
// policy leaves the task for a human. An outage is not marked, so the
// policy restarts the task. A producer that hit a fatal error is retired
// and the next Report connects a new one.
//
// # Header values
//
// Values are UTF-8 strings as in Connect. For a Kafka partition name
// "topic/3", __connect.errors.topic is "topic" and
// __connect.errors.partition is "3"; for other sources the topic header
// holds the whole partition name and the partition header is left out.
// __connect.errors.stage is floe's stage in upper case (DESERIALIZE,
// CONVERT, SCHEMA, WRITE); __connect.errors.class.name is the plugin
// component that failed; __connect.errors.exception.class.name is Connect's
// org.apache.kafka.connect.errors.DataException for conversion stages and
// ConnectException otherwise, so Connect tooling groups them as it would;
// the stack trace header carries the reason (a Go plugin has no Java stack).
package dlq
