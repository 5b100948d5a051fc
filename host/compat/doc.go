// Package compat reads connector configs written for Kafka Connect and the
// Apache Iceberg sink, so that a Connect user changes nothing but, at
// most, connector.class.
//
// # What it translates
//
// [Translate] turns such a config into the one floe runs. The config as
// the user gave it is what floe stores and answers with; the translation
// is made again wherever the config is used (validation, the runtime, the
// plugins' configs), so a stored config never drifts from what the user
// sent:
//
//   - A connector with topics or topics.regex and no source reads Kafka
//     with the kafka source; the worker config's bootstrap.servers is its
//     kafka.bootstrap.servers unless the connector sets one.
//   - Connect's converters (key.converter, value.converter and their
//     settings, from the connector or inherited from the worker config)
//     become the kafka source's key.format, value.format and
//     schema.registry.* keys. Converters floe cannot read (JSON,
//     Protobuf, String values) are an error naming what is supported.
//   - The Apache sink's keys that floe has no use for (its control topic,
//     Hadoop and Kafka client settings, identifier columns, …) are
//     accepted and left out, each with a note saying why; the worker logs
//     every note when it validates the connector. Keys whose meaning floe
//     cannot honour (upsert mode, a commit branch other than main) are
//     errors.
//
// A key the config sets in floe's own terms always wins over a derived one.
//
// # Documentation
//
// [Fields] declares the Connect and Apache sink keys for the host's spec,
// so that config/validate and `floe plugins` document them like any other
// key.
package compat
