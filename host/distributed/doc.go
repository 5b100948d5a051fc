// Package distributed runs a floe worker as one of a cluster, as Kafka
// Connect's distributed mode does: workers with the same group.id share
// the connectors of the config topic, and a connector whose worker dies
// or leaves moves to another.
//
// A [Herder] holds the worker's seat in the membership group (package
// cluster) and the stores on the internal topics (package kafkastore).
// The group's leader claims the config topic, so it alone writes
// connector configs and the assignment; the assignment places each
// connector on one worker, which runs all its tasks. Every worker reads
// the assignment and starts or stops its connectors to match it. Two
// workers may briefly run one connector during a move (a dead worker is
// noticed after the session timeout, a paused one may wake up); the
// table's fence (ranges from the table's frontier, AssertRefSnapshotID)
// keeps that from adding a duplicate or a gap.
//
// REST writes go to the leader ([Forwarder]); reads are answered by any
// worker from the stores.
package distributed
