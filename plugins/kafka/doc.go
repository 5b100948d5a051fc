// Package kafka is floe's kafka source: it reads Kafka topics whose values
// are Avro in the Confluent wire format (a Schema Registry serializer's
// framing) and hands them on as Arrow batches. The binary is
// cmd/floe-plugin-kafka; connectors pick it with "source": "kafka".
//
// # Consumers and partitions
//
// Each task runs one librdkafka consumer (confluent-kafka-go), and all
// tasks of a connector join one consumer group, consumer.group.id, by
// default connect-<connector name> as Kafka Connect names its sink
// connectors' groups. The group uses the cooperative-sticky assignor, so
// a rebalance moves only the partitions that change owner; the others keep
// flowing. Source partitions are named <topic>/<partition>. Subscriptions
// are a list of topics (topics) or a pattern matched against whole topic
// names (topics.regex), which also picks up matching topics created later.
//
// Where a newly assigned partition starts, in order: the position floe
// holds for it (SourceHost.StartPositions: the sink's committed frontier),
// else the group's committed offset, else the earliest or latest offset
// (consumer.auto.offset.reset), resolved to a number at once so the first
// batch's From is exact. The consumer never commits on its own
// (enable.auto.commit and enable.auto.offset.store are off): Commit, which
// the host calls after each checkpoint commit, commits the positions the
// sink holds to the group, for monitoring tools only.
//
// When partitions are revoked, the records buffered for them and not yet
// handed on are dropped, and SourceHost.PartitionsRevoked is told, per
// partition, the Next of the last batch handed on (the start position if
// none was); the host checkpoints until those are committed before it
// answers, and only then is the partition unassigned, so the next owner
// starts exactly there. A batch being formed while its partition is
// revoked is dropped, not handed on. Close does not ask the host: it
// closes tasks after its own final checkpoint.
//
// # Static membership
//
// Each task is a static member of the group (consumer.static.membership,
// on by default; KIP-345). Its group.instance.id is
// floe-<connector>-<task>-<digest>, the digest of the worker (host name
// and data dir) and of the subscription. A task that comes back on the
// same worker after a crash or a kill -9 of its process or of the host
// rejoins under the same id and gets its partitions back at once: no
// rebalance, no wait for the old member's session timeout. The digest
// keeps another worker running the same task (a standby, a zombie that
// woke up) from fencing the one that runs it, and keeps a changed
// subscription from getting the old one's assignment, which the broker
// hands a rejoining static member without a rebalance. A static member's
// close alone does not leave the group, so Close unsubscribes first,
// which does: the partitions of a task that closes (stopped, moved to
// another worker, tasks.max lowered, restarted for a new config) go to
// the other members at once, and a member closing between the two halves
// of a cooperative rebalance cannot leave partitions to nobody (its
// successor under the same id would be handed its assignment without the
// rebalance's second half). Only a task that died waits: its partitions
// move after session.timeout.ms (10 s here), unless it comes back first.
// A process killed inside such a rebalance cannot leave, and its tasks'
// successors are handed an assignment that leaves partitions to nobody;
// a task whose consumer holds no partition for three session timeouts
// while its topics have one per task therefore joins the group again,
// which makes it rebalance them (starved.go).
//
// A record below its partition's start position (a topic deleted and
// recreated, a truncated log) fails the task: its offsets no longer match
// what the sink holds. Records redelivered below the position reached
// (after a pause) are dropped. When the first record after an assignment
// comes after the start position (retention deleted the records in
// between, or an offset reset), a warning names the gap; the batch covers
// it.
//
// # Buffer and backpressure
//
// A poll goroutine per task moves records from the consumer into a
// buffer of per-partition queues. Past buffer.max.bytes it pauses every
// assigned partition; it keeps polling, so the member keeps its place in
// the group (heartbeats, max.poll.interval.ms) and rebalances are still
// handled, and it resumes them once the buffer drains below half; while
// they are paused every buffered record is ready (no linger), so partial
// batches cannot hold the buffer above half. librdkafka's own prefetch
// queue (queued.max.messages.kbytes) defaults to half of
// buffer.max.bytes, and fetch.queue.backoff.ms to 100 (librdkafka's 1 s
// idled a backlogged task every time that queue filled). With a worker
// memory budget (floe.memory.bytes, the process's share of
// memory.max.bytes) an unset buffer.max.bytes takes a quarter of the
// share split over the tasks (at most 64 MiB), fetch.max.bytes half of it
// and the prefetch queue a quarter (in payload; librdkafka holds about as
// much again per message), and the process's Go heap limit what
// librdkafka leaves (memory.go).
//
// # Batches
//
// Read hands on ready batches, oldest first: a partition is ready when it
// holds batch.size records or its oldest record waited batch.linger.ms
// (unset: a third of the connector's commit interval, 100 to 500 ms,
// since a record waits for the next commit anyway and every batch wakes
// each process it crosses). A batch is a run of one partition's
// consecutive records of one value schema (a schema change starts a new
// batch), at most batch.size long;
// its From is the previous batch's Next (or the start position) and its
// Next the offset after its last record, so the batches of a partition
// chain. Decoding happens in Read, on the host's goroutine, straight from
// Avro into Arrow builders (schemas.Decoder), while the poll goroutine
// keeps filling the buffer. A batch reserves its string and binary
// columns' data for the last batch's bytes per row, so the buffers do not
// grow by doubling (garbage the heap limit of a memory budget turned into
// collection work).
//
// Columns: the value schema's columns (schemas.ArrowSchema), then
//
//	__offset     int64                the record's offset
//	__timestamp  timestamp[ms, UTC]   the Kafka record timestamp (null if the broker gave none)
//	__key        binary, nullable     the key: its bytes for key.format string and bytes;
//	                                  for avro, the Avro payload after the 5-byte Confluent
//	                                  header (not decoded)
//	__headers    map<string, binary>  the record headers in order, duplicates kept;
//	                                  null when the record has none
//
// # Schemas
//
// The schema id in each value's header is looked up in the registry
// (cached per task) and, the first time the task sees it, offered to the
// host (SourceHost.AdmitSchema) with its Avro text, its Arrow value schema
// and its subject under value.subject.name.strategy, before any batch of
// it. The id decides how a record decodes whatever the strategy.
//
// While the registry cannot answer (network errors, timeouts, HTTP error
// answers), Read retries with backoff (100 ms doubling to 5 s), logging
// each failure, and keeps the records buffered: an outage is not the
// records' fault. After schema.registry.retry.timeout.ms it fails the
// task with the registry's URL.
//
// An id the registry answers "not found" for (HTTP 404) is not taken as
// final either: a registry restarted with empty storage, or a replica
// that has not caught up, answers so until the schema is registered
// again. Its records wait, buffered, while the id is asked again with the
// same backoff, for up to schema.registry.unknown.timeout.ms (60 s);
// after that they are bad records (below). The id is still asked again
// every 5 s at most while records carry it, so registering the schema
// heals the records after it. Records carrying distinct unknown ids in
// one partition wait in turn: a topic known to hold such garbage can set
// the timeout lower (0 dead-letters at once).
//
// # Bad records
//
// Records that cannot be read go to SourceHost.DeadLetter, with the key,
// value, headers and timestamp as read (headers in order with repeats, a
// null key, value or header value apart from an empty one, so the
// dead-letter topic gets the record byte for byte), and count in their batch's
// Skipped, so the chain stays contiguous. Stages and causes:
//
//   - deserialize: a null value (a tombstone, with
//     behavior.on.null.values=dlq, the default); an empty value; a value
//     that does not start with magic byte 0 or is shorter than the 5-byte
//     header; a schema id the registry still does not know after
//     schema.registry.unknown.timeout.ms (HTTP 404); a payload
//     that does not decode with its schema (truncated, malformed, trailing
//     bytes); a key without the Confluent header under key.format=avro.
//   - schema: a schema the host rejected (sdk.ErrSchemaRejected, with its
//     reason), or one floe cannot read (not Avro, a recursive record, an
//     unresolvable reference).
//
// Every reason starts with "topic T partition P offset O: " and says what
// went wrong. When the host refuses the dead letters (errors.tolerance is
// none), Read fails with that refusal and the first bad record's reason.
// behavior.on.null.values=ignore skips tombstones without a dead letter
// (they still count in Skipped and are logged at debug level); fail fails
// the task, naming the record and its key.
//
// # Security
//
// librdkafka settings pass through with the "kafka." prefix:
// kafka.security.protocol, kafka.ssl.* and kafka.sasl.* (PLAIN, SCRAM,
// OAUTHBEARER, GSSAPI). Secret keys (kafka.sasl.password,
// kafka.ssl.key.password, kafka.ssl.keystore.password, kafka.ssl.key.pem,
// kafka.sasl.oauthbearer.client.secret, schema.registry.basic.auth.user.info)
// are declared as passwords, so floe never shows them. The registry takes
// basic auth and PEM files for TLS (schema.registry.ssl.*).
package kafka
