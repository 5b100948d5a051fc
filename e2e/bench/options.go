package bench

import (
	"path/filepath"
	"time"
)

// Options are the benchmark's knobs. [Defaults] gives the issues' full
// durations, or --quick's (each section a few minutes).
type Options struct {
	Quick bool
	// Reps is how many times each throughput measurement runs
	// (interleaved with its raw limit); tables quote medians.
	Reps int
	// SchemaFile is the Avro schema of every generated record
	// (testdata/event.avsc: ~193 Avro bytes, the stack probe's record).
	SchemaFile string
	// Seed is datagen.seed and the preload's seed.
	Seed int64

	// Section 1, datagen → iceberg.
	DatagenRecords int64         // datagen.count per floe run
	RawRecords     int           // records per raw-limit run (section 2), per chunk of one (section 1)
	CommitInterval time.Duration // sections 1 and 2
	TargetFileSize int64         // iceberg.tables.target-file-size-bytes (and the raw limit's)

	// Section 2, kafka → iceberg.
	KafkaRecords    int64
	KafkaPartitions int
	KafkaTasks      int // tasks.max, and the bare consumers and raw goroutines

	// Section 3, freshness.
	FreshDuration      time.Duration // the 1 s-commit run (commit latency series)
	FreshShortDuration time.Duration // the 10 s-commit run
	FreshRate          float64       // records/s to produce; 0: half of what producer and floe sustain together
	SustainStep        time.Duration // each step of the sustainable-rate probe
	FreshWarmup        time.Duration // rows produced this soon after the start are left out
	FreshCalibRecords  int64         // preload for measuring floe's max when section 2 did not run

	LakeDuration time.Duration // each lake run's producing time
	LakeRate     float64       // records/s to produce; 0: a quarter of floe's measured max

	// Section 4, partitioners.
	PartDuration  time.Duration
	PartInterval  time.Duration
	PartWriters   int
	PartZipfS     float64
	PartKeys      int
	PartitionBy   string // the table's spec in sections 4 and 5
	PartReps      int
	PartSampleLag time.Duration // ignore writer_load samples taken this soon after the first commit

	// Section 5, maintenance.
	MaintDuration   time.Duration
	MaintInterval   time.Duration
	MaintSample     time.Duration
	MaintWriters    int
	MaintConfig     map[string]string // the maintenance.* / process.maintenance.* keys of the "with" run
	ScanRuns        int
	ScanColumn      string
	CompactTimeout  time.Duration
	MaintDatagenCap float64 // datagen.rate of both runs; 0 = as fast as floe goes

	// Recovery section (issue 15): kills under a paced load, broker
	// restarts.
	RecoveryKills          int               // kills of each target (and no-kill baselines)
	RecoveryBrokerRestarts int               // broker restarts, SIGTERM and kill -9 in turn
	RecoveryRate           float64           // records/s produced throughout
	RecoverySteady         time.Duration     // steady state after a catch-up before the next kill
	RecoveryBrokerDown     time.Duration     // how long the broker stays down
	RecoveryTimeout        time.Duration     // a catch-up that takes longer fails the section
	RecoveryConfig         map[string]string // connector keys added (or, empty, removed)

	// Distributed section (issue 12): three workers, failover, cooperative
	// rebalances, cost.
	DistKills      int           // kill -9s of the connector's worker
	DistRate       float64       // records/s produced throughout
	DistCommit     time.Duration // commit.interval.ms of the connectors
	DistCostWindow time.Duration // each cost window (3 workers, 1 worker)
	DistRebalances int           // joins and leaves (each) of a fourth worker
	DistConnectors int           // connectors during the rebalances

	// Paced section (issue 14): floe's CPU at a steady rate.
	PacedRate   float64       // records/s produced throughout
	PacedCommit time.Duration // commit.interval.ms
	PacedWarmup time.Duration // after the first commit, before the window
	PacedWindow time.Duration // the measured window

	// Worker holds worker config keys every floe run gets (for example
	// plugin.transport.tls=true), beyond the harness's.
	Worker map[string]string
	// Connector holds connector keys added to the connector of every
	// floe run StartRun starts (an A/B of a plugin default, say).
	Connector map[string]string

	// Profile runs perf on floe and its plugins (unstripped builds) during
	// the second floe run of sections 1 and 2.
	Profile        bool
	ProfileSeconds int
	// ResultsDir receives profiles (bench-results).
	ResultsDir string
}

// Defaults returns the full (quick=false) or quick options. repo is the
// repository root.
func Defaults(repo string, quick bool) Options {
	o := Options{
		Quick:           quick,
		Reps:            3,
		SchemaFile:      filepath.Join(repo, "e2e", "bench", "testdata", "event.avsc"),
		Seed:            42,
		DatagenRecords:  30_000_000,
		RawRecords:      2_000_000,
		CommitInterval:  10 * time.Second,
		TargetFileSize:  128 << 20,
		KafkaRecords:    5_000_000,
		KafkaPartitions: 6,
		KafkaTasks:      2,

		FreshDuration:      30 * time.Minute,
		FreshShortDuration: 5 * time.Minute,
		FreshWarmup:        15 * time.Second,
		FreshCalibRecords:  1_000_000,
		SustainStep:        20 * time.Second,
		LakeDuration:       3 * time.Minute,

		PartDuration:  5 * time.Minute,
		PartInterval:  10 * time.Second,
		PartWriters:   8,
		PartZipfS:     1.2,
		PartKeys:      10_000,
		PartitionBy:   "bucket(16, customer_id)",
		PartReps:      3,
		PartSampleLag: 5 * time.Second,

		MaintDuration: 15 * time.Minute,
		MaintInterval: time.Second,
		MaintSample:   10 * time.Second,
		MaintWriters:  8,
		// The with-maintenance run takes the plugin's defaults (tuned
		// for 1 s commits: look every commit interval, compact a
		// partition once it has 4 small files, at most every second,
		// with the head strategy (a tail gathers the newest files by
		// copying its row groups, a head gains the tail's bytes 4 MiB
		// at a time), two groups at once plus one for small ones, at
		// niceness 10; expire beyond the newest 400 snapshots of the
		// last hour, due at 500).
		MaintConfig: map[string]string{},
		// The seed's setup, which issue 18's targets were measured at.
		// Unthrottled (264 k records/s through 8 writers here) no
		// compaction run ended within a quick run's 3 minutes
		// (bench-results/2026-12-06.md, 19:28).
		MaintDatagenCap: 30_000,
		ScanRuns:        3,
		ScanColumn:      "quantity",
		CompactTimeout:  30 * time.Minute,

		RecoveryKills:          10,
		RecoveryBrokerRestarts: 6,
		RecoveryRate:           2000,
		RecoverySteady:         2 * time.Second,
		RecoveryBrokerDown:     5 * time.Second,
		RecoveryTimeout:        2 * time.Minute,
		RecoveryConfig:         map[string]string{},

		DistKills:      10,
		DistRate:       1000,
		DistCommit:     time.Second,
		DistCostWindow: 30 * time.Second,
		DistRebalances: 2,
		DistConnectors: 4,

		PacedRate:   20_000,
		PacedCommit: time.Second,
		PacedWarmup: 30 * time.Second,
		PacedWindow: 90 * time.Second,

		Worker:         map[string]string{},
		Connector:      map[string]string{},
		ProfileSeconds: 15,
		ResultsDir:     filepath.Join(repo, "bench-results"),
	}
	if quick {
		o.DatagenRecords = 6_000_000
		o.RawRecords = 1_000_000
		o.KafkaRecords = 1_000_000
		o.FreshDuration = 3 * time.Minute
		o.FreshShortDuration = time.Minute
		o.FreshCalibRecords = 500_000
		o.SustainStep = 10 * time.Second
		o.LakeDuration = time.Minute
		o.PartDuration = 15 * time.Second
		o.PartInterval = 5 * time.Second
		o.MaintDuration = 3 * time.Minute
		o.CompactTimeout = 10 * time.Minute
		o.RecoveryKills = 3
		o.RecoveryBrokerRestarts = 3
		o.DistKills = 3
		o.DistCostWindow = 15 * time.Second
		o.DistRebalances = 1
		o.PacedWarmup = 15 * time.Second
		o.PacedWindow = 30 * time.Second
	}
	return o
}
