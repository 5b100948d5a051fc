package maintenance

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// The tasks, in the order a cycle runs them on a table: compaction first
// (it adds a replace snapshot), then the manifest rewrite that tidies what
// it left, then expiry, then the file cleanups.
const (
	taskRewriteData      = "rewrite-data-files"
	taskRewriteManifests = "rewrite-manifests"
	taskExpire           = "expire-snapshots"
	taskMetadataFiles    = "delete-metadata-files"
	taskOrphans          = "delete-orphan-files"
)

// allTasks lists the tasks in cycle order.
var allTasks = []string{taskRewriteData, taskRewriteManifests, taskExpire, taskMetadataFiles, taskOrphans}

// Keys the maintenance plugin declares.
const (
	prefix          = "maintenance."
	keyPollInterval = "maintenance.poll.interval.ms"
	keyTables       = "maintenance.tables"
	keyLockLease    = "maintenance.lock.lease.ms"
	keyMaxAttempts  = "maintenance.commit.max-attempts"
	keyHistoryRuns  = "maintenance.history.max-runs"

	// Per-task key suffixes: maintenance.<task><suffix>.
	sfxEnabled         = ".enabled"
	sfxCommitCount     = ".trigger.commit-count"
	sfxDataFileCount   = ".trigger.data-file-count"
	sfxSmallFileCount  = ".trigger.small-file-count"
	sfxSmallFileBytes  = ".trigger.small-file-bytes"
	sfxDeleteFileCount = ".trigger.delete-file-count"
	sfxSnapshotCount   = ".trigger.snapshot-count"
	sfxManifestCount   = ".trigger.manifest-count"
	sfxInterval        = ".trigger.interval.ms"
	sfxMinInterval     = ".min-interval.ms"

	keyTargetFileSize          = "maintenance.rewrite-data-files.target-file-size-bytes"
	keyMinInputFiles           = "maintenance.rewrite-data-files.min-input-files"
	keyStrategy                = "maintenance.rewrite-data-files.strategy"
	keySizeRatio               = "maintenance.rewrite-data-files.size-ratio"
	keyPartialProgress         = "maintenance.rewrite-data-files.partial-progress.enabled"
	keyMaxCommits              = "maintenance.rewrite-data-files.partial-progress.max-commits"
	keyMaxGroups               = "maintenance.rewrite-data-files.max-concurrent-groups"
	keySkipNewest              = "maintenance.rewrite-data-files.skip-newest.ms"
	keyMaxRunBytes             = "maintenance.rewrite-data-files.max-bytes-per-run"
	keyIntermediateCompression = "maintenance.rewrite-data-files.intermediate-compression"
	keyReplanInterval          = "maintenance.rewrite-data-files.replan-interval.ms"
	keyCopyRowGroups           = "maintenance.rewrite-data-files.copy-row-groups.min-file-bytes"
	keyCopyRowGroupsMax        = "maintenance.rewrite-data-files.copy-row-groups.max-row-groups"
	keyTailRowGroupsMax        = "maintenance.rewrite-data-files.copy-row-groups.tail-max-row-groups"
	keyIdlePartition           = "maintenance.rewrite-data-files.idle-partition.ms"

	keyManifestTarget = "maintenance.rewrite-manifests.target-manifest-size-bytes"

	keyExpireRetainLast   = "maintenance.expire-snapshots.retain-last"
	keyExpireMaxAge       = "maintenance.expire-snapshots.max-age.ms"
	keyExpireMaxSnapshots = "maintenance.expire-snapshots.max-snapshots"

	keyOrphanOlderThan = "maintenance.delete-orphan-files.older-than.ms"
	keyOrphanDryRun    = "maintenance.delete-orphan-files.dry-run"

	keyMetadataRetainLast = "maintenance.delete-metadata-files.retain-last"
)

// Keys of the sink and the host this plugin reads. A plugin receives only
// the keys its spec declares, so borrowedFields declares them here too;
// the sink and the host own and document them.
const (
	keyIcebergTables  = "iceberg.tables"
	keyDynamic        = "iceberg.tables.dynamic-enabled"
	keyCatalogName    = lake.KeyCatalogName
	keyCatalogNameAlt = lake.KeyCatalogNameAlt
	keyDataDir        = lake.KeyDataDir
	// keyCommitInterval is the host's checkpoint interval; the poll
	// interval and snapshot expiry's cadence follow it when not set.
	keyCommitInterval    = "commit.interval.ms"
	keyCommitIntervalAlt = "iceberg.control.commit.interval-ms"
)

const (
	defaultTargetFileSize = 128 << 20
	// minOrphanAge is the shortest safety age for orphan cleanup: files
	// of a checkpoint that is still being committed (retries, backoff)
	// are unreferenced for that long at most, by a wide margin.
	minOrphanAge = time.Hour
)

// taskDefaults are a task's trigger defaults, tuned for 1 s commits: the
// default config ("maintenance": "iceberg-maintenance" alone) keeps data
// files per partition low, manifests few and metadata small without
// rewriting on every poll.
type taskDefaults struct {
	enabled                                                                   bool
	commits, dataFiles, smallFiles, smallBytes, deletes, snapshots, manifests int64
	interval, minInterval                                                     time.Duration
	doc                                                                       string
	// derivedCadence: the snapshot-count trigger and the min interval
	// have no fixed default (see expiryCadence).
	derivedCadence bool
}

var defaults = map[string]taskDefaults{
	// Compaction looks as often as the poll interval allows: at 1 s
	// commits a partition gains a file a second, and the head strategy
	// merges the newest files by copying them, so a run that finds
	// little to do is cheap. A head and a tail are small files too, so 4
	// small files in a partition is two new ones; a second apart at
	// least, which at 1 s commits is every cycle.
	taskRewriteData: {enabled: true, smallFiles: 4, deletes: 5, minInterval: time.Second,
		doc: "compacts small data files of each partition into files of the target size (a replace commit per partition), picking files by the strategy"},
	// Every compaction commit adds manifests; merge them back soon.
	taskRewriteManifests: {enabled: true, manifests: 20, minInterval: time.Minute,
		doc: "rewrites the current snapshot's manifests into few, target-size ones"},
	// Expiry's snapshot-count trigger and min interval follow the
	// commit interval and max-snapshots (expiryCadence), so a table at
	// 1 s commits never holds much more than max-snapshots.
	taskExpire: {enabled: true, interval: 10 * time.Minute, derivedCadence: true,
		doc: "expires snapshots beyond retain-last that are older than max-age or beyond the newest max-snapshots, never the newest snapshot of any floe connector, and deletes the files only they referenced"},
	// Tables the sink creates delete superseded metadata.json files on
	// every commit (write.metadata.delete-after-commit.enabled); for
	// other tables the commit-count trigger bounds the folder at 1 s
	// commits to about retain-last + 300 files instead of an hour's 3,600.
	taskMetadataFiles: {enabled: true, commits: 300, interval: time.Hour, minInterval: 5 * time.Minute,
		doc: "deletes metadata.json files older than the newest retain-last versions"},
	taskOrphans: {enabled: true, interval: 24 * time.Hour, minInterval: time.Hour,
		doc: "deletes files under the table location that no snapshot references and that are older than the safety age"},
}

// Spec declares the maintenance plugin's config keys. Every threshold is
// off at 0; a task runs when any of its thresholds is met and its min
// interval has passed since its last run on that table.
func Spec() sdk.Spec {
	const gGeneral = "Maintenance"
	fields := []*sdk.Field{
		sdk.Duration(keyPollInterval).
			Describe("How often each table is looked at (its metadata and manifests, never its data) to decide what is due; the plugin asks for the next cycle after this long (milliseconds or a Go duration). Empty means the connector's commit.interval.ms (or iceberg.control.commit.interval-ms), between 1 s and 1 min (1 s at 1 s commits, so compaction keeps up with a file per partition per second), or 1 min when the connector does not set it.").
			Check(atLeast(time.Second)).InGroup(gGeneral).Rank(sdk.High),
		sdk.List(keyTables).
			Describe("Tables to look after, as namespace.table. Empty means the connector's iceberg.tables; with iceberg.tables.dynamic-enabled, also every table in those tables' namespaces (every namespace when iceberg.tables is empty) that the connector wrote to.").
			WithExample("sales.orders,sales.refunds").Check(checkTableList).InGroup(gGeneral),
		sdk.Duration(keyLockLease).
			Describe("Lease of the per-table, per-task lock (in the SQL catalog's database, else a lock file under floe.data.dir); renewed every third of it while the task runs. A crashed holder's lock frees after this long.").
			Default("60000").Check(atLeast(3 * time.Second)).InGroup(gGeneral).Rank(sdk.Low),
		sdk.Int(keyMaxAttempts).
			Describe("Commit attempts of a task when a concurrent commit (ingestion) moved the table: reload, re-plan, retry.").
			Default("10").Min(1).Max(100).InGroup(gGeneral).Rank(sdk.Low),
		sdk.Int(keyHistoryRuns).
			Describe("Runs kept in memory and reported by Status; the history file under <floe.data.dir>/maintenance keeps the same number plus each task's last run.").
			Default("100").Min(1).Max(10000).InGroup(gGeneral).Rank(sdk.Low),
	}
	for _, task := range allTasks {
		fields = append(fields, taskFields(task)...)
	}
	fields = append(fields,
		sdk.Long(keyTargetFileSize).
			Describe("Size of compacted files in bytes. Empty means the table's write.target-file-size-bytes, else 128 MiB. Files under 75 % of it are small: they are compacted and counted by the small-file triggers.").
			Check(atLeastInt(1<<10)).InGroup(taskRewriteData),
		sdk.Int(keyMinInputFiles).
			Describe("Fewest files of one partition worth rewriting together: a partition whose strategy picks fewer is left alone.").
			Default("2").Min(2).InGroup(taskRewriteData),
		sdk.String(keyStrategy).
			Describe("Which small files of a partition a run rewrites. head (for streaming tables): the partition's small files but its biggest (the head) are merged into one, the tail, copying the row groups of the newest files instead of decoding them (see copy-row-groups.tail-max-row-groups); once they hold copy-row-groups.min-file-bytes they are rewritten into one row group appended to the head (whose row groups are copied), until another append would take the head past the target size: a finished file, its row groups kept. A hot partition keeps its finished files, a head, a tail and the files of the last second or two; each byte is decoded about three times. tiered (size-tiered): the smallest files, plus each next one at most size-ratio times the bytes taken so far, up to the target size; each byte is rewritten O(log(target/small)) times and a partition keeps about that many files plus the newest arrivals. bin-pack: every small file of the partition each run (a full compaction; at 1 s commits it rewrites the partition's whole history every run). A forced run (floe maintain --force rewrite-data-files) always bin-packs; so does a run for a partition idle for idle-partition.ms, whatever the strategy.").
			Default(strategyHead).OneOf(strategyHead, strategyTiered, strategyBinPack).InGroup(taskRewriteData),
		sdk.Double(keySizeRatio).
			Describe("tiered: a file joins a rewrite when it is at most this many times the bytes of the smaller files taken. Higher leaves fewer files per partition and rewrites each byte more often (about log(target/small) / log(1 + 1/ratio) times at most); with copy-row-groups most of those rewrites of big files are copies.").
			Default("3").Min(0.5).Max(100).InGroup(taskRewriteData),
		sdk.Bool(keyPartialProgress).
			Describe("Commit each partition's rewrite on its own, so a conflict or failure in one keeps the others; false commits all groups at once.").
			Default("true").InGroup(taskRewriteData),
		sdk.Int(keyMaxCommits).
			Describe("With partial progress, the commits of a run's plan: its partition groups are committed in this many batches, each as soon as its groups are rewritten (a group that fails leaves the others' commits alone); each re-plan's groups (replan-interval) are one more commit. Every commit is a snapshot in the table's metadata, and expiry keeps max-snapshots of them: at 1 s commits the head strategy runs every few seconds, and 3 commits a plan took compaction to about 70 snapshots a minute, the table's peak to 534 snapshots and a 519 KiB metadata.json between expiries, over issue 18's 512 KiB; 1 keeps them to about 40.").
			Default("1").Min(1).Max(1000).InGroup(taskRewriteData),
		sdk.Int(keyMaxGroups).
			Describe("Partition groups read and rewritten at once (each uses up to the process's CPUs and about a target file of memory); groups of a re-plan (replan-interval) may use one more.").
			Default("2").Min(1).Max(64).InGroup(taskRewriteData),
		sdk.Long(keyMaxRunBytes).
			Describe("Most bytes of input one run rewrites (0: no limit). A run takes its partition groups smallest first, so the newest small files are always merged, and a tier's big merge waits for a later run instead of holding the table's compaction for minutes while small files pile up behind it. At least twice the target size, so the biggest group always fits behind the small ones. A forced run (floe maintain --force rewrite-data-files) takes everything.").
			Default("268435456").Check(atLeastInt(0)).InGroup(taskRewriteData),
		sdk.String(keyIntermediateCompression).
			Describe("Parquet codec of what compaction writes into files still under 75 % of the target size, which a later run merges again: codec or codec:level (zstd:1, lz4raw, snappy, …), or table for the table's write.parquet.compression-codec. Most rewritten bytes are such intermediate files, and zstd at level 1 writes them about 15 % faster than zstd's default level, about as small (as LSM stores compress upper levels lighter than the bottom one). With the tiered strategy a file that reaches 75 % of the target is rewritten with the table's codec; with the head strategy a finished file keeps its head's row groups, written with this codec (table gives them the table's, for more CPU). A forced run and an idle partition's full compaction use the table's codec.").
			Default("zstd:1").Check(func(v string) error { _, err := parseCompression(v); return err }).InGroup(taskRewriteData),
		sdk.Duration(keyReplanInterval).
			Describe("While a run's groups are being rewritten, plan the table again this often and merge the files that arrived since (the run's own files left out) in groups of their own, of at most 1/16 of the target size (the newest files and the smallest tiers), which go ahead of bigger groups still waiting and may start in one slot beyond max-concurrent-groups. At 1 s commits a tier's big merges take seconds and every partition gains a file a second meanwhile; this keeps those files from piling up until the next run. Re-plans stop when the run's first plan is done, so a run still ends. 0 plans once per run; a forced run, a run without partial progress and the bin-pack strategy plan once.").
			Default("1000").Check(offOrAtLeast(100*time.Millisecond)).InGroup(taskRewriteData),
		sdk.Long(keyCopyRowGroups).
			Describe("Parquet files of at least this many bytes with no deletes to apply are not decoded and written again by a merge: their row groups are copied as they are (as parquet-mr's appendRowGroups joins files) and only the group's other files are rewritten, into one row group after them, so a merge costs about a copy of the big file. head strategy: this is the head size, the bytes a partition's newest files gather in its tail before they become one row group of its head; and a head within this size of the target becomes a finished file with its row groups. tiered strategy: a group whose output reaches 75 % of the target (a finished file) is rewritten whole, with the table's codec and full row groups. A forced run's groups, an idle partition's full compaction and a format v3 table's groups are rewritten whole. Copied row groups keep the codec they were written with (see intermediate-compression). 0 rewrites every file (tiered only: the head strategy appends by copying).").
			Default("4194304").Check(atLeastInt(0)).InGroup(taskRewriteData),
		sdk.Int(keyCopyRowGroupsMax).
			Describe("With copy-row-groups, the most row groups a merge leaves in a copied file. head strategy: a head that would get more keeps its leading, bigger row groups as they are and has its trailing ones rewritten with the new rows into one (as many as needed, and each next one back while it is no bigger than the bytes taken so far), so a head, and the finished file it becomes, keeps few row groups of decreasing size, and a merge decodes its small recent ones, not its big old ones. Each row group costs readers a little: PyIceberg reads a batch per row group (about 1 ms each, against about 1 ms a file), and the bench's maintained table read 1.42× slower than a compacted one with 319 row groups on 112 files (8 here and in the tail) and 0.84× with 170 on 83. tiered strategy: a file with this many row groups is rewritten whole instead of copied; in the 15-minute bench, 0 (no limit) left 480 row groups on 104 files and PyIceberg's full scan took 1.64× as long as on a fully compacted table, 4 left 186 on 115 files and 0.98×. 0: no limit.").
			Default("4").Min(0).InGroup(taskRewriteData),
		sdk.Int(keyTailRowGroupsMax).
			Describe("head strategy: the most row groups a tail merge (a merge of a partition's small files that stays under copy-row-groups.min-file-bytes) leaves in the tail. A tail merge copies the tail's row groups and rewrites only the newest files into one row group after them, so taking in a new file costs a copy of the tail and a decode of the new rows; a tail that would get more row groups has its trailing ones rewritten with the new rows (see copy-row-groups.max-row-groups). Each tail row group is small, which readers pay a little for. 0: no limit.").
			Default("6").Min(0).InGroup(taskRewriteData),
		sdk.Duration(keyIdlePartition).
			Describe(fmt.Sprintf("A partition whose newest data file is older than this is idle (yesterday's day partition, a bucket no key maps to any more): its small files are compacted fully, bin-packed into target-size files with the table's codec and full row groups, once, whatever the strategy, and the task is due when a partition is idle with min-input-files small files. Empty means %d of the connector's commit intervals (%s or %s), between %s and %s; %s when the connector does not set the commit interval. 0: never. Files are dated by the snapshot that added them, so a partition compaction rewrote counts as new until that long after the compaction.",
				idleCommits, keyCommitInterval, keyCommitIntervalAlt, minIdleAfter, maxIdleAfter, maxIdleAfter)).
			Check(atLeast(0)).InGroup(taskRewriteData),
		sdk.Duration(keySkipNewest).
			Describe("Leave files added less than this long ago alone (the current checkpoint window), so compaction never races the newest commits; 0 compacts every small file.").
			Default("0").Check(atLeast(0)).InGroup(taskRewriteData),
		sdk.Long(keyManifestTarget).
			Describe("Target size of rewritten manifests in bytes. Empty means the table's commit.manifest.target-size-bytes (8 MiB).").
			Check(atLeastInt(1<<10)).InGroup(taskRewriteManifests),
		sdk.Int(keyExpireRetainLast).
			Describe("Snapshots of the main branch always kept, whatever their age and max-snapshots. The newest snapshot of every floe connector is kept as well: recovery reads its offsets.").
			Default("10").Min(1).InGroup(taskExpire),
		sdk.Duration(keyExpireMaxAge).
			Describe("Snapshots younger than this are kept (the time travel window), up to max-snapshots of them: at 5-minute commits an hour is 12 snapshots and the age decides; at 1 s commits it would be 3,600 and more (compaction's snapshots too), and max-snapshots decides.").
			Default("3600000").Check(atLeast(0)).InGroup(taskExpire),
		sdk.Int(keyExpireMaxSnapshots).
			Describe(fmt.Sprintf("Most snapshots kept of the main branch's lineage, however young: when more than this many are younger than max-age, the newest max-snapshots are kept and the rest expired (with every snapshot off the lineage), but never fewer than retain-last nor the newest snapshot of any floe connector. Every commit rewrites metadata.json, which holds every snapshot (about 1 KiB each with floe's offsets), so this bounds its size and the commit's cost. Empty means %d (about 400 KiB of metadata.json): at 5-minute commits an hour holds 12 and max-age decides; at 10 s commits it holds 360 commits plus compaction's snapshots, about the limit; at 1 s commits the newest 400 are about 4 minutes (with compaction's snapshots), at 300 ms about 1.5. The expire task's trigger and min interval follow it and the commit interval (see their keys), so the table holds about an eighth more. Expiry deletes the data files only expired snapshots referenced, so a query reading a snapshot older than that window may fail: raise it for long queries on fast-committing tables. 0: no count limit, max-age alone.", defaultMaxSnapshots)).
			Min(0).InGroup(taskExpire),
		sdk.Duration(keyOrphanOlderThan).
			Describe("Safety age: only files older than this are orphans. It covers files of checkpoints still being committed and of commits racing the cleanup; at least 1 h.").
			Default("259200000").Check(atLeast(minOrphanAge)).InGroup(taskOrphans),
		sdk.Bool(keyOrphanDryRun).
			Describe("List orphan files in the run's detail without deleting them.").
			Default("false").InGroup(taskOrphans),
		sdk.Int(keyMetadataRetainLast).
			Describe("metadata.json versions kept besides the current one. Empty means the table's write.metadata.previous-versions-max (100). Older versions of the table's metadata folder are deleted; versions written after the task looked at the table are never touched.").
			Min(1).InGroup(taskMetadataFiles),
	)
	fields = append(fields, borrowedFields()...)
	return sdk.NewSpec(fields...)
}

// borrowedFields declares the sink's and the host's keys the plugin reads:
// the catalog (the sink's, so both open the same one), the sink's tables,
// and the commit interval the poll interval follows.
func borrowedFields() []*sdk.Field {
	const g = "Read from the sink and the host"
	fields := lake.CatalogFields(g)
	for _, f := range fields {
		f.Rank(sdk.Low)
	}
	return append(fields,
		sdk.List(keyIcebergTables).
			Describe("The sink's tables: the tables looked after when "+keyTables+" is empty.").InGroup(g).Rank(sdk.Low),
		sdk.Bool(keyDynamic).
			Describe("The sink's dynamic routing: with it, the tables the connector wrote to are looked after too.").
			Default("false").InGroup(g).Rank(sdk.Low),
		sdk.Duration(keyCommitInterval).
			Describe("The host's checkpoint interval: the poll interval follows it when "+keyPollInterval+" is empty.").
			InGroup(g).Rank(sdk.Low),
		sdk.Duration(keyCommitIntervalAlt).
			Describe("The host's alias of "+keyCommitInterval+".").InGroup(g).Rank(sdk.Low),
	)
}

func taskFields(task string) []*sdk.Field {
	d := defaults[task]
	k := func(sfx string) string { return prefix + task + sfx }
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	ms := func(v time.Duration) string { return strconv.FormatInt(v.Milliseconds(), 10) }
	snapshotCount := sdk.Long(k(sfxSnapshotCount)).
		Describe("Trigger: snapshots in the table's metadata; 0 is off.").
		Default(n(d.snapshots)).Min(0).InGroup(task)
	minInterval := sdk.Duration(k(sfxMinInterval)).
		Describe("Shortest time between two runs of the task on one table, whatever the triggers say (a forced run ignores it).").
		Default(ms(d.minInterval)).Check(atLeast(0)).InGroup(task)
	if d.derivedCadence {
		snapshotCount = sdk.Long(k(sfxSnapshotCount)).
			Describe(fmt.Sprintf("Trigger: snapshots in the table's metadata; 0 is off. Empty means %s plus an eighth (%d with the defaults), so a run finds about an eighth of max-snapshots to expire; %d when %s is 0.",
				keyExpireMaxSnapshots, expiryCadence(0, defaultMaxSnapshots).snapshotTrigger, ageOnlySnapshotTrigger, keyExpireMaxSnapshots)).
			Min(0).InGroup(task)
		minInterval = sdk.Duration(k(sfxMinInterval)).
			Describe(fmt.Sprintf("Shortest time between two runs of the task on one table, whatever the triggers say (a forced run ignores it). Empty means %d of the connector's commit intervals (%s or %s), between %d s and %d min: 30 s at 1 s commits, in which the table gains 50 to 80 snapshots with compaction's, so it holds about max-snapshots plus an eighth; %d min when the connector does not set the commit interval.",
				cadenceCommits, keyCommitInterval, keyCommitIntervalAlt, int(minExpiryInterval.Seconds()), int(maxExpiryInterval.Minutes()), int(maxExpiryInterval.Minutes()))).
			Check(atLeast(0)).InGroup(task)
	}
	return []*sdk.Field{
		sdk.Bool(k(sfxEnabled)).
			Describe("Run " + task + ": " + d.doc + ".").
			Default(strconv.FormatBool(d.enabled)).InGroup(task).Rank(sdk.High),
		sdk.Long(k(sfxCommitCount)).
			Describe("Trigger: commits to the table (other than maintenance's own) since the task last ran on it; 0 is off.").
			Default(n(d.commits)).Min(0).InGroup(task),
		sdk.Long(k(sfxDataFileCount)).
			Describe("Trigger: live data files in the table's fullest partition; 0 is off.").
			Default(n(d.dataFiles)).Min(0).InGroup(task),
		sdk.Long(k(sfxSmallFileCount)).
			Describe("Trigger: small data files (under 75 % of the compaction target size) in the partition with the most of them; 0 is off.").
			Default(n(d.smallFiles)).Min(0).InGroup(task),
		sdk.Long(k(sfxSmallFileBytes)).
			Describe("Trigger: bytes in small data files (under 75 % of the compaction target size) across the table; 0 is off.").
			Default(n(d.smallBytes)).Min(0).InGroup(task),
		sdk.Long(k(sfxDeleteFileCount)).
			Describe("Trigger: live delete files (position or equality) in the table; 0 is off.").
			Default(n(d.deletes)).Min(0).InGroup(task),
		snapshotCount,
		sdk.Long(k(sfxManifestCount)).
			Describe("Trigger: manifests of the current snapshot; 0 is off.").
			Default(n(d.manifests)).Min(0).InGroup(task),
		sdk.Duration(k(sfxInterval)).
			Describe("Trigger: time since the task last ran on the table (a task that never ran is due at once); 0 is off.").
			Default(ms(d.interval)).Check(atLeast(0)).InGroup(task),
		minInterval,
	}
}

func atLeast(min time.Duration) func(string) error {
	return func(v string) error {
		d, err := sdk.ParseDuration(v)
		if err == nil && d < min {
			return fmt.Errorf("must be at least %s", min)
		}
		return nil
	}
}

// offOrAtLeast accepts 0 (off) or a duration of at least min.
func offOrAtLeast(min time.Duration) func(string) error {
	return func(v string) error {
		d, err := sdk.ParseDuration(v)
		if err == nil && d != 0 && d < min {
			return fmt.Errorf("must be 0 (off) or at least %s", min)
		}
		return nil
	}
}

func atLeastInt(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil && n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

func checkTableList(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, err := parseTableName(s); err != nil {
			return err
		}
	}
	return nil
}

// parseTableName splits namespace.table (the namespace may have several
// levels: a.b.table).
func parseTableName(s string) (table.Identifier, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("table %q: expected namespace.table", s)
	}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t/\\") {
			return nil, fmt.Errorf("table %q: expected namespace.table (names without blanks or slashes)", s)
		}
	}
	return parts, nil
}

// thresholds are one task's triggers; a zero threshold is off.
type thresholds struct {
	commitCount, dataFileCount, smallFileCount, smallFileBytes, deleteFileCount, snapshotCount, manifestCount int64
	// idlePartitions: partitions idle for idle-partition.ms (compaction
	// only; 1 when that is set).
	idlePartitions        int64
	interval, minInterval time.Duration
}

// settings is the parsed config.
type settings struct {
	connector    string
	dataDir      string
	catalogName  string
	pollInterval time.Duration
	lockLease    time.Duration
	maxAttempts  int
	historyRuns  int

	// tables are explicit tables; dynamic adds tables the connector wrote
	// to in namespaces (all namespaces when namespaces is empty).
	tables     []string
	dynamic    bool
	namespaces []string

	enabled  map[string]bool
	triggers map[string]thresholds

	targetFileSize          int64 // 0: the table's
	minInputFiles           int
	strategy                string
	sizeRatio               float64
	partialProgress         bool
	maxCommits              int
	maxGroups               int
	maxRunBytes             int64 // 0: no limit
	intermediateCompression compression
	replanInterval          time.Duration // 0: plan once per run
	copyRowGroupsMin        int64         // 0: rewrite every file
	copyRowGroupsMax        int           // 0: no limit
	tailRowGroupsMax        int           // 0: no limit
	idleAfter               time.Duration // 0: partitions are never idle
	skipNewest              time.Duration

	manifestTarget int64 // 0: the table's

	retainLast   int
	maxAge       time.Duration
	maxSnapshots int // 0: no count limit

	// commitInterval is the connector's commit.interval.ms; 0 when the
	// config does not set it.
	commitInterval time.Duration

	orphanAge    time.Duration
	orphanDryRun bool

	metadataRetain int // 0: the table's
}

// parseSettings validates the connector config against Spec and reads it.
// Errors name the key.
func parseSettings(connector string, cfg sdk.Config) (settings, error) {
	spec := Spec()
	raw := cfg.Map()
	if errs := spec.Validate(raw); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return settings{}, fmt.Errorf("iceberg-maintenance: invalid config: %s", strings.Join(msgs, "; "))
	}
	cfg = spec.Config(raw)
	r := cfg.Reader()
	s := settings{
		connector:        connector,
		dataDir:          strings.TrimSpace(cfg.String(keyDataDir)),
		catalogName:      strings.TrimSpace(cfg.String(keyCatalogName)),
		pollInterval:     r.Duration(keyPollInterval),
		lockLease:        r.Duration(keyLockLease),
		maxAttempts:      r.Int(keyMaxAttempts),
		historyRuns:      r.Int(keyHistoryRuns),
		dynamic:          r.Bool(keyDynamic),
		enabled:          map[string]bool{},
		triggers:         map[string]thresholds{},
		targetFileSize:   r.Int64(keyTargetFileSize),
		minInputFiles:    r.Int(keyMinInputFiles),
		strategy:         cfg.String(keyStrategy),
		sizeRatio:        r.Float64(keySizeRatio),
		partialProgress:  r.Bool(keyPartialProgress),
		maxCommits:       r.Int(keyMaxCommits),
		maxGroups:        r.Int(keyMaxGroups),
		maxRunBytes:      r.Int64(keyMaxRunBytes),
		replanInterval:   r.Duration(keyReplanInterval),
		copyRowGroupsMin: r.Int64(keyCopyRowGroups),
		copyRowGroupsMax: r.Int(keyCopyRowGroupsMax),
		tailRowGroupsMax: r.Int(keyTailRowGroupsMax),
		skipNewest:       r.Duration(keySkipNewest),
		manifestTarget:   r.Int64(keyManifestTarget),
		retainLast:       r.Int(keyExpireRetainLast),
		maxAge:           r.Duration(keyExpireMaxAge),
		maxSnapshots:     defaultMaxSnapshots,
		commitInterval:   commitInterval(cfg),
		orphanAge:        r.Duration(keyOrphanOlderThan),
		orphanDryRun:     r.Bool(keyOrphanDryRun),
		metadataRetain:   r.Int(keyMetadataRetainLast),
	}
	var err error
	if s.intermediateCompression, err = parseCompression(cfg.String(keyIntermediateCompression)); err != nil {
		return settings{}, fmt.Errorf("iceberg-maintenance: %s: %w", keyIntermediateCompression, err)
	}
	if s.pollInterval <= 0 {
		s.pollInterval = derivedPollInterval(s.commitInterval)
	}
	s.idleAfter = derivedIdleAfter(s.commitInterval)
	if set(raw, keyIdlePartition) {
		s.idleAfter = r.Duration(keyIdlePartition)
	}
	if s.strategy == strategyHead && s.copyRowGroupsMin <= 0 {
		return settings{}, fmt.Errorf("iceberg-maintenance: %s is head, which appends to a partition's head by copying its row groups, but %s is 0 (copying off): set it (the default is 4194304) or choose the tiered strategy", keyStrategy, keyCopyRowGroups)
	}
	if set(raw, keyExpireMaxSnapshots) {
		s.maxSnapshots = r.Int(keyExpireMaxSnapshots)
	}
	if s.catalogName == "" {
		s.catalogName = strings.TrimSpace(cfg.String(keyCatalogNameAlt))
	}
	if s.catalogName == "" {
		s.catalogName = lake.DefaultCatalogName
	}
	for _, task := range allTasks {
		k := func(sfx string) string { return prefix + task + sfx }
		s.enabled[task] = r.Bool(k(sfxEnabled))
		s.triggers[task] = thresholds{
			commitCount:     r.Int64(k(sfxCommitCount)),
			dataFileCount:   r.Int64(k(sfxDataFileCount)),
			smallFileCount:  r.Int64(k(sfxSmallFileCount)),
			smallFileBytes:  r.Int64(k(sfxSmallFileBytes)),
			deleteFileCount: r.Int64(k(sfxDeleteFileCount)),
			snapshotCount:   r.Int64(k(sfxSnapshotCount)),
			manifestCount:   r.Int64(k(sfxManifestCount)),
			interval:        r.Duration(k(sfxInterval)),
			minInterval:     r.Duration(k(sfxMinInterval)),
		}
		if task == taskRewriteData && s.idleAfter > 0 {
			th := s.triggers[task]
			th.idlePartitions = 1
			s.triggers[task] = th
		}
		if defaults[task].derivedCadence {
			th := s.triggers[task]
			c := expiryCadence(s.commitInterval, s.maxSnapshots)
			if !set(raw, k(sfxSnapshotCount)) {
				th.snapshotCount = c.snapshotTrigger
			}
			if !set(raw, k(sfxMinInterval)) {
				th.minInterval = c.minInterval
			}
			s.triggers[task] = th
		}
	}
	if err := r.Err(); err != nil {
		return settings{}, fmt.Errorf("iceberg-maintenance: invalid config: %w", err)
	}

	explicit := cfg.List(keyTables)
	if len(explicit) > 0 {
		s.dynamic = false // an explicit list is the whole list
	} else {
		explicit = cfg.List(keyIcebergTables)
	}
	seen := map[string]bool{}
	for _, t := range explicit {
		id, err := parseTableName(t)
		if err != nil {
			return settings{}, fmt.Errorf("iceberg-maintenance: tables: %w", err)
		}
		name := strings.Join(id, ".")
		if !seen[name] {
			seen[name] = true
			s.tables = append(s.tables, name)
		}
		if ns := strings.Join(id[:len(id)-1], "."); s.dynamic && !slices.Contains(s.namespaces, ns) {
			s.namespaces = append(s.namespaces, ns)
		}
	}
	if len(s.tables) == 0 && !s.dynamic {
		return settings{}, fmt.Errorf("iceberg-maintenance: no tables to look after: set %s (or the sink's %s)", keyTables, keyIcebergTables)
	}
	return s, nil
}

// set reports whether the user gave key a value: a blank one means the
// derived default, as an absent one does.
func set(raw map[string]string, key string) bool { return strings.TrimSpace(raw[key]) != "" }

// commitInterval is the connector's commit.interval.ms (or its alias when
// it is not set), 0 when neither is set: the host's own default is the
// host's, and a plugin does not see it.
func commitInterval(cfg sdk.Config) time.Duration {
	v, ok := cfg.Get(keyCommitInterval)
	if !ok || strings.TrimSpace(v) == "" {
		if v, ok = cfg.Get(keyCommitIntervalAlt); !ok {
			return 0
		}
	}
	d, err := sdk.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// derivedPollInterval is the poll interval when none is set: the
// connector's commit interval, between 1 s and 1 min, so a table is looked
// at as often as it gains files; 1 min without a commit interval.
func derivedPollInterval(commit time.Duration) time.Duration {
	const fallback = time.Minute
	if commit <= 0 {
		return fallback
	}
	return min(max(commit, time.Second), fallback)
}

// Idle partitions: a partition whose newest file is older than idleCommits
// commit intervals, between minIdleAfter and maxIdleAfter, is compacted
// fully. At 1 s commits a minute; at 5-minute commits an hour, so an
// hourly partition is compacted about an hour after it closed, and a day
// partition an hour after midnight.
const (
	idleCommits  = 60
	minIdleAfter = time.Minute
	maxIdleAfter = time.Hour
)

// derivedIdleAfter is idle-partition.ms when not set: idleCommits commit
// intervals between minIdleAfter and maxIdleAfter; maxIdleAfter when the
// commit interval is unknown (0).
func derivedIdleAfter(commit time.Duration) time.Duration {
	if commit <= 0 {
		return maxIdleAfter
	}
	return min(max(idleCommits*commit, minIdleAfter), maxIdleAfter)
}

// targetSize is the compaction target of tbl: the configured size, else
// the table's write.target-file-size-bytes, else 128 MiB.
func (s settings) targetSize(props map[string]string) int64 {
	if s.targetFileSize > 0 {
		return s.targetFileSize
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(props[table.WriteTargetFileSizeBytesKey]), 10, 64); err == nil && v > 0 {
		return v
	}
	return defaultTargetFileSize
}

// smallFileLimit is the size under which a data file is small: the
// compaction planner's own minimum (75 % of the target).
func smallFileLimit(target int64) int64 { return target * 3 / 4 }
