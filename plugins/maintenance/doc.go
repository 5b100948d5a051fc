// Package maintenance is floe's iceberg-maintenance plugin: it keeps a
// connector's Iceberg tables fast to query while ingestion commits every
// second. It runs in its own process (binary
// cmd/floe-plugin-iceberg-maintenance), with the CPU and memory limits the
// host sets from the connector's process.maintenance.cpus and .memory
// (GOMAXPROCS, GOMEMLIMIT), either inside a running connector
// ("maintenance": "iceberg-maintenance") or alone with `floe maintain
// <connector.json> [--once]`. Ingestion never waits for it.
//
// # Which tables
//
// maintenance.tables when set; otherwise the connector's iceberg.tables,
// and with iceberg.tables.dynamic-enabled also every table in those
// tables' namespaces (every namespace when iceberg.tables is empty) that
// carries the sink's floe.connector.<name> marker or a snapshot of the
// connector. A listed table that does not exist yet is skipped.
//
// # Monitor, triggers, lock
//
// Each Cycle is the Flink maintenance model: a monitor, a trigger manager
// and tasks. The monitor reads each table's metadata (never its data):
// snapshots since the previous cycle, commits and added files and bytes
// from the snapshot summaries, and, from the current manifests (each read
// once, cached by path), data files, small files and bytes per partition,
// delete files, manifests, and the metadata.json size. Status reports the
// same as sdk.TableHealth.
//
// The trigger manager decides per table and task: a task is due when any
// of its thresholds (maintenance.<task>.trigger.commit-count,
// .data-file-count, .small-file-count, .small-file-bytes, .delete-file-count,
// .snapshot-count, .manifest-count, .interval.ms; 0 is off) is met and
// its .min-interval.ms has passed since its last run there. The first
// threshold met is the run's trigger ("data-file-count 57 ≥ 50"), and
// compaction is also due when a partition is idle (see Hot and cold
// partitions). The monitor polls every maintenance.poll.interval.ms, by
// default the connector's commit.interval.ms (between 1 s and 1 min), and
// compaction's defaults (4 small files in a partition, a second apart at
// least) keep up with 1 s commits.
//
// A due task runs under a per-table, per-task lease. When the catalog is
// a SQL catalog (SQLite or Postgres), the lease is a row of
// floe_maintenance_locks next to iceberg_tables, taken with one atomic INSERT … ON CONFLICT DO UPDATE … WHERE expired and
// renewed every third of maintenance.lock.lease.ms while the task runs, so
// two maintenance instances on any host never run one task on one table
// at once. Otherwise the lease is a flock'ed file under
// <floe.data.dir>/maintenance/locks (rest, glue, hive and hadoop
// catalogs), which excludes instances on one host only. Once it holds the
// lock the task
// decides again on a freshly loaded table: the previous holder may have
// done the work.
//
// # Tasks
//
// In cycle order: rewrite-data-files (compact each partition's small
// files into target-size files; partial progress commits the partitions
// in a few batches),
// rewrite-manifests, expire-snapshots (see Snapshot retention below),
// delete-metadata-files, delete-orphan-files (older than a safety age,
// default 3 days).
// Compaction picks a partition's files by its strategy (selection.go;
// see "Hot and cold partitions" below for the default, head). tiered is
// size-tiered compaction as LSM stores do it: sort the partition's small
// files by size, take the smallest and each next one at most size-ratio
// (3) times the bytes taken so far, up to the target; each byte is
// rewritten O(log(target/small)) times and a streaming partition keeps
// about that many files plus the newest. bin-pack takes every small file
// (a full compaction: at 1 s commits it would rewrite each partition's
// whole history every run); a forced run (floe maintain --force
// rewrite-data-files) always bin-packs. A run rewrites at most
// max-bytes-per-run (256 MiB) of input, its partition groups smallest
// first: on a uniformly keyed table every partition reaches a big merge
// at once, and taking them all in one run would hold compaction while
// each partition gains a file a second. For the same reason a run plans
// the table again every replan-interval (1 s) while its groups are
// rewritten, leaving its own files out, and merges the files that
// arrived meanwhile in quick groups of their own (at most 1/16 of the
// target), ahead of bigger groups still waiting; such small groups may
// start in one slot beyond max-concurrent-groups (2). Row groups of files
// that an earlier merge wrote are copied byte for byte instead of decoded
// (copy_row_groups.go, package stitch); with the tiered strategy the merge
// that finishes a file (75 % of the target) rewrites it whole, with the
// table's codec.
//
// # Hot and cold partitions
//
// A hot partition receives a file at every commit: a bucket of
// bucket(16, key) at 1 s commits, or today's day(ts) partition. The head
// strategy keeps it at its finished files, one head, one tail and the
// files of the last second or two, and decodes each row about three
// times:
//
//   - the tail gathers the newest files: a run merges the partition's
//     small files but the head into one, copying the tail's row groups
//     and decoding only the new files into one row group after them, so
//     taking in a second's file costs a copy of a few MiB;
//   - once the tail and the new files hold copy-row-groups.min-file-bytes
//     (4 MiB), they are rewritten into one row group appended to the
//     head, the partition's biggest small file, whose row groups are
//     copied: the head grows 4 MiB at a time;
//   - a head that another append would take past the target size (at
//     124 MiB of 128) is a finished file, never merged again, about as
//     big as a full compaction's; it keeps its row groups (a forced run
//     or the idle compaction below rewrites them with the table's codec).
//
// A tail or head that would hold more than tail-max-row-groups (6) or
// max-row-groups (4) row groups keeps its leading row groups and has
// its trailing ones rewritten with the new rows, as many as needed and
// each next one back while it is no bigger than the bytes taken so far:
// its row groups stay few and about decreasing in size (the size tiers
// of tiered compaction, inside one file), and readers never meet many
// tiny row groups.
//
// In the 15-minute bench (8 writers, bucket(16), 1 s commits) the
// fullest partition stays at about five files where tiered kept eight,
// for no more compaction CPU (bench-results/, README).
//
// A cold partition receives nothing any more: yesterday's day(ts) or
// hour(ts) partition once the clock moved on, or a bucket no key maps to.
// When a partition's newest data file is older than idle-partition.ms
// (60 commit intervals, between 1 minute and 1 hour: at 5-minute commits
// an hourly partition settles about an hour after it closed, a day
// partition an hour after midnight) and it still holds min-input-files
// small files, the next run compacts it fully, whatever the strategy: its
// small files are bin-packed into target-size files with the table's
// codec and full row groups, exactly as floe maintain --force would, and
// that partition alone makes the task due. Its finished files are left
// as they are, so a closed day ends as about size / target files, and
// only the last of them small. Files are dated by the snapshot that
// added them, so a late record arriving in a closed partition makes it
// hot for idle-partition.ms, after which it is compacted fully again
// (only its small files: the late one and the remainder). A table
// partitioned by time and by bucket gets both behaviours, partition by
// partition.
//
// None of them changes a row: compaction reads rows with their deletes
// applied and writes them back (or copies row groups of files with no
// deletes), the others touch only metadata and unreferenced files.
//
// Every commit retries around ingestion: a commit that finds the branch
// moved is replayed by iceberg-go on the fresh head right after the next
// ingestion commit lands (see replayCatalog), and re-planned from scratch
// if that keeps failing. A data file to replace that another rewrite
// removed stops the replay; compaction then drops that group.
//
// # Snapshot retention
//
// Every commit rewrites the whole metadata.json, and it holds every
// snapshot the table keeps (about 1 KiB each with floe's offsets), so the
// number of snapshots is what makes metadata large and commits slow. An
// age alone does not bound it: an hour is 12 commits at 5-minute commits
// and 3,600 at 1 s, plus compaction's replace snapshots. expire-snapshots
// therefore keeps the snapshots of the main branch's lineage that are
// younger than max-age.ms (1 h), at most max-snapshots of them (400), at
// least retain-last (10), and always down to the newest snapshot of every
// floe connector, whose offsets recovery reads; every other snapshot
// goes, with the files only it referenced. The count is one number for
// every commit interval because the cost is per snapshot:
//
//	commit.interval.ms   kept (ingestion commits only)    expiry min interval
//	300 ms               400, about the last 2 minutes    15 s
//	1 s                  400, about the last 6½ minutes   30 s
//	10 s                 360, the last hour (max-age)     5 min
//	5 min                12, the last hour (max-age)      5 min
//
// (compaction's snapshots shorten the window: at 1 s commits to about 4
// minutes, and at 10 s commits they may bring the hour over the count). What follows the commit interval is the cadence: the
// task is due when the table holds an eighth more than max-snapshots
// (trigger.snapshot-count, 450) and at most every 30 commit intervals,
// between 15 s and 5 min (min-interval.ms; 5 min when the connector does
// not set commit.interval.ms). At 1 s commits the table gains 50 to 80
// snapshots in 30 s with compaction's, about the trigger's eighth, so it
// holds about 450 to 520 snapshots at the most and its metadata.json
// under 512 KiB. A set key wins over its
// derived default; max-snapshots 0 leaves the age alone. A query still
// reading a snapshot older than the window may miss files that expiry
// deleted: raise max-snapshots for long queries on fast-committing tables.
//
// Superseded metadata.json files: tables the sink creates set
// write.metadata.delete-after-commit.enabled and previous-versions-max
// 50, so every commit (floe's and maintenance's, through iceberg-go)
// deletes the versions that fall off the metadata log and the folder
// holds about 51 files. delete-metadata-files catches what that leaves
// (versions written by commit attempts that lost a race, which no log
// lists: 38 in 900 commits at 200 ms with compaction and expiry; other
// writers, failed deletes, tables without the property), when 300
// commits or an hour have passed, at most every 5 minutes: a folder at 1 s
// commits stays within about retain-last + 300 versions.
//
// # History
//
// The last maintenance.history.max-runs runs (default 100) are kept in
// memory for Status and appended as JSON lines to
// <floe.data.dir>/maintenance/<connector>.jsonl, so `floe maintain` runs
// and restarts share the history and the min intervals.
package maintenance
