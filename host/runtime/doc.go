// Package runtime runs one connector: its plugin processes, the pipeline
// of each source task, the checkpoint barrier, the committer, and the
// supervision that restarts crashed plugins without losing or doubling a
// record. docs/architecture.md is the contract; this page says how the
// host side keeps it.
//
// # Processes
//
// [Start] starts one process per role through [Plugins]: source,
// partitioner, sink, and maintenance when configured, each with
// GOMAXPROCS/GOMEMLIMIT and niceness from process.<kind>.cpus, .memory and
// .nice, and a logger labelled connector=<name> plugin=<component>. Every
// plugin config is the connector's plus floe.data.dir ([KeyDataDir]).
//
// # Pipeline
//
// Each source task has a reader goroutine, which alone calls the task's
// Read, Commit and Close, and a writer goroutine. The reader asks for at
// most as many batches as it has free in-flight slots
// (pipeline.max.inflight.batches); the writer takes them in order and, for
// each, holds the checkpoint gate shared while it checks the batch against
// the partition's accepted frontier (a replayed part is trimmed, a gap
// fails the task naming the partition and the missing positions), asks the
// partitioner for writer indexes and hands the batch to the sink's Write.
//
// # Checkpoints and commits
//
// A checkpoint is taken every commit.interval.ms (alias
// iceberg.control.commit.interval-ms), when the bytes written since the
// last one pass checkpoint.max.buffered.bytes, on PartitionsRevoked, at end
// of input and at shutdown. The barrier waits for room among the pending
// checkpoints (checkpoint.max.pending), takes the gate exclusively (every
// Write of checkpoint N has returned), snapshots per partition the range
// [frontier at the previous barrier, frontier now), moves the epoch to N+1
// and releases the gate; then it calls Flush(N) while writes of N+1 go on,
// and hands the checkpoint to the committer through a [ResultChannel] (in
// memory here; a Kafka topic in distributed mode). A checkpoint in which
// no partition advanced is skipped: idle connectors make no commits, and
// idle partitions never hold one back.
//
// The committer calls Commit in checkpoint order, retrying with a doubling
// backoff; after Tuning.CommitMaxAttempts failures (10) or
// Tuning.CommitMaxElapsed (5 min) the connector fails with the reason
// rather than stop committing silently (the worker's restart policy then
// restarts it). After a commit it records the new
// frontier, stores it ([store.OffsetStore]), and passes each task the
// positions of its partitions for the source's Commit (monitoring only).
//
// # End of input and shutdown
//
// When every task's Read reported end of input and all it read is written,
// a final checkpoint follows; once it is committed, [Progress].EndOfInput
// is set. Tasks stay RUNNING (Connect has no finished state).
// [Connector.Stop] (or the end of Start's ctx) stops reading, writes what
// was read, takes a final checkpoint, waits for every commit, closes the
// tasks and ends the processes; it returns nil when nothing was lost.
// Pause stops reading only; checkpoints go on. A task shows PAUSED once the
// Read it had under way when the pause came has returned (a Read is
// bounded by Tuning.ReadPoll), the connector once all its tasks do: from
// then on no record is read.
//
// # Supervision
//
// A process that exits is restarted after plugin.restart.backoff.ms,
// doubled per consecutive crash and capped at 60 s, up to
// plugin.restart.max.attempts; then the tasks that need it fail with the
// exit reason. A source crash reopens its tasks, which resume from the
// host's accepted frontier. A partitioner crash redoes the batch in hand.
// A sink crash loses the sink's uncommitted checkpoints: the pipeline is
// torn down, the sink restarted, and every source task reopened so that it
// resumes from the sink's fresh frontier. A Write or Flush that fails
// with sdk.ErrTransient (the sink's object store or catalog is down) is
// handled alike without a process restart: after a pause (from
// Tuning.CommitBackoff, doubling up to CommitMaxBackoff) the sink is
// opened again on the same process (its Open may wait for the service)
// and the tasks resume from its frontier; the connector does not fail
// unless the reopens find the service down for CommitMaxElapsed with no
// commit in between. A maintenance crash restarts maintenance alone.
//
// # Offset overrides
//
// PATCH and DELETE /connectors/{c}/offsets (on a STOPPED connector) store
// a [store.Override]: the complete new start frontier, and the sink's last
// committed checkpoint at that time. On the next start the runtime
// resumes from it instead of the sink's frontier, unless the sink's
// frontier is already past that checkpoint (the override was committed:
// it is deleted). While an override is pending the sink's Open request
// carries it (client.SinkOpen.OffsetsReset, sdk.OffsetsReset: the
// positions and after_checkpoint N). The sink's contract for it:
//
//   - on its first commit, if the table's last floe checkpoint of the
//     connector is still <= after_checkpoint, it replaces the table's
//     frontier with positions (partitions absent there have none), then
//     applies the commit's ranges on top: a range's From is checked
//     against positions, not the old frontier, and rows below the old
//     frontier are not dropped as replays;
//   - that commit's snapshot summary carries floe.offsets.reset=true;
//   - otherwise (a later checkpoint exists) it ignores the override.
//
// The runtime deletes the override after that first commit.
package runtime
