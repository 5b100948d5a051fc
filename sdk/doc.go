// Package sdk is everything a floe plugin author needs: the Go interfaces
// for the four plugin kinds, the declarative config spec, and Serve.
//
// # Plugin kinds
//
// A floe connector moves records from a [Source] through a [Partitioner]
// into a [Sink], and a [Maintenance] plugin keeps the sink's tables healthy.
// Each kind is opened once per task (or once per connector, for partitioners,
// sinks and maintenance) and returns a task value whose methods the host
// calls; the doc comment of each method says when it is called, what its
// context means and what may run concurrently.
//
// # Processes
//
// A plugin is an executable named floe-plugin-<name> that calls [Serve] from
// main. The host starts one process per connector and plugin binary; that
// process hosts all of the connector's tasks of that kind, so Open may be
// called several times, concurrently, in one process. A crash restarts the
// process and only that connector's tasks.
//
// # Records
//
// Records always travel in batches ([Batch]): an Arrow record batch holding
// the value columns followed by floe's metadata columns ([ColumnOffset],
// [ColumnTimestamp], [ColumnKey], [ColumnHeaders]). Each batch covers a
// contiguous span of one source partition, from From to Next.
//
// # Config
//
// Every component declares its config keys once, with [NewSpec] and the
// field constructors ([String], [Int], [Bool], ...), and states the rules
// between keys with [Spec.WithCheck], whose errors name their key with
// [KeyError]. Checks against the systems a config names (a registry, a
// catalog) are probes, [Spec.WithProbe]: they run for config/validate
// only, with a deadline. The declaration drives validation, defaults, the
// REST API's config/validate answer and the `floe plugins` listing. Values
// reach the plugin as a [Config] with the defaults filled in.
//
// # Writing a plugin
//
// See docs/write-a-plugin.md in the repository, and the example plugin in
// examples/modulo-partitioner.
package sdk
