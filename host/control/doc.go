// Package control carries connectors' control messages between the
// workers of a cluster over one Kafka topic: the checkpoints each worker
// flushed, for the connector's committer, and the committer's answers
// (package runtime, [runtime.ControlLink], defines both and what the
// runtime does with them).
//
// # The topic
//
// control.topic (default <group.id>-floe-control) holds messages, not
// state: it is created with cleanup.policy=delete and a retention of an
// hour (a message matters for a few commit intervals), and an existing
// topic with another policy stops the worker with an error naming it.
// control.topic.partitions (default 6) spreads the connectors: a
// connector's messages are keyed by its name and go to one partition, in
// order. Each message carries the cluster's group.id; messages of
// another cluster sharing the topic are ignored.
//
// # Links
//
// [Transport.Link] opens one connector's link on one worker: the
// worker's shared producer, and a consumer of the connector's partition
// from its end at that moment (the runtime's workers publish again what
// a new committer has not answered, so nothing older is needed). Publish
// waits for the broker's acknowledgement (acks=all), at most
// deliveryTimeout: the runtime publishes again what was not answered, so
// the producer is not idempotent, and one that reports nothing for longer
// is replaced.
package control
