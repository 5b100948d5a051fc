// Package kafkastore keeps a distributed worker's state on Kafka
// compacted topics, behind the interfaces of package store, so the
// runtime and the worker use it as they use the standalone files.
//
// # Tables
//
// A [Table] is a key→value log on a compacted topic: a reader consumes
// every partition from the beginning and applies records in partition
// order into a map (a tombstone deletes its key), optionally through an
// admission rule. [Table.ReadToEnd] returns once the reader has applied
// everything up to the end offsets observed at the call, so a worker reads
// a store to its end before it acts on it or answers a read. Writes are
// confirmed by the broker and applied by the writer's own reader before
// they return (read-your-writes); [Table.WaitFor] gives the same to
// another worker holding the returned position. An OnApply callback sees
// every applied record, in order.
//
// # Envelopes
//
// Every value is a JSON envelope:
//
//	{"format": 1, "group_id": "<group.id>", "epoch": 7, "data": {…}}
//
// A tombstone carries the same fields in the headers floe.format,
// floe.group.id and floe.epoch. A record of another cluster (two clusters
// pointed at one topic) stops the reader with an error wrapping
// [ErrOtherCluster] that names the topic, the record and both group.ids; a
// record floe did not write, or of a newer format, stops it too.
//
// # Stores
//
//   - [Configs] on config.storage.topic (exactly one partition):
//     connector-<name>, target-state-<name>, restart-<name>, floe-leader,
//     floe-assignment. One writer, through a transactional producer whose
//     claim fences the previous writer ([ErrFenced]); readers ignore
//     records of a leader epoch older than the newest floe-leader's.
//   - [Statuses] on status.storage.topic: status-connector-<name>,
//     status-task-<name>-<id>, topics-<name>, worker-<id>. Every worker
//     writes its own; a stale generation never overwrites a newer one
//     (Connect's putSafe rule; see Statuses for what it cannot guarantee).
//   - [Offsets] on offset.storage.topic: committed-<name>,
//     override-<name>, committer-<name>.
//
// # Topics
//
// [ParseSettings] reads Kafka Connect's worker keys (group.id,
// config.storage.topic, offset.storage.topic, status.storage.topic, their
// .replication.factor and .partitions, and the client keys of package
// kclient). Each Open function creates its missing topic compacted through
// kclient's EnsureTopic, or fails with a clear error on an existing topic
// that is not compacted (or, for the config topic, has more than one
// partition).
package kafkastore
