// Package store keeps a worker's state: connector configs and target
// states, statuses, the topics each connector used, committed offsets and
// offset overrides.
//
// # Interfaces
//
// The worker and the runtime see three small interfaces, [ConfigStore],
// [StatusStore] and [OffsetStore], so that distributed mode can back them
// with Kafka compacted topics later without touching their callers. [Local]
// implements all three with files under the worker's data directory, for
// standalone mode.
//
// # Files
//
// Under the data directory:
//
//	connectors/<name>.json        config and target state
//	status/<name>.json            last connector and task states, topics seen
//	topics/<name>.json            topics the connector used since the last reset
//	offsets/<name>.json           positions of the last commit
//	overrides/<name>.json         positions set by PATCH/DELETE offsets, not yet committed
//
// Names are escaped so any connector name maps to one file name. Every
// write goes to a temporary file, is synced, renamed over the target, and
// the directory is synced: a crash leaves the old file or the new one,
// never half of one. A file that does not parse is an error naming it.
package store
