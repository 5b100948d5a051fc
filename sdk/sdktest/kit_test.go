package sdktest

import (
	"slices"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

var sourceChecks = []string{CheckSpec, CheckInvalidConfig, CheckLifecycle, CheckBatchesChain, CheckSchemaAdmitted,
	CheckRejectedSchema, CheckRestart, CheckBackpressure, CheckReadCtx}

// only returns a Skip list that leaves just check to run.
func only(all []string, check string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == check })
}

func fakeSourceCase(skip []string) SourceCase {
	return SourceCase{
		Component:   "fake",
		Config:      map[string]string{"rows": "50"},
		Records:     400,
		Pause:       1500 * time.Millisecond,
		ReadTimeout: 3 * time.Second,
		Skip:        skip,
	}
}

// TestSourceKitConforming runs the kit through the exported entry point on
// a conforming source: every check must pass.
func TestSourceKitConforming(t *testing.T) {
	f := &fakeSource{}
	SourceKit(t, InProcess(f.component()), fakeSourceCase(nil))
}

// TestSourceKitBounded checks a source whose input ends.
func TestSourceKitBounded(t *testing.T) {
	f := &fakeSource{endAfter: 120}
	r := newRecorder("kit")
	sourceKit(r, InProcess(f.component()), fakeSourceCase(nil))
	r.finish()
	expectClean(t, r)
}

// A rule between keys stated with Spec.WithCheck satisfies invalid_config:
// Validate refuses what Open refuses.
func TestSourceKitCheckedRule(t *testing.T) {
	c := fakeSourceCase(only(sourceChecks, CheckInvalidConfig))
	c.InvalidConfig = map[string]string{"rows": "5000"}
	r := newRecorder("kit")
	sourceKit(r, InProcess((&fakeSource{checkedRule: true}).component()), c)
	r.finish()
	expectClean(t, r)
}

func TestSourceKitCatches(t *testing.T) {
	tests := []struct {
		name   string
		source *fakeSource
		check  string
		want   string
		modify func(*SourceCase)
	}{
		{"gap between batches", &fakeSource{gap: true}, CheckBatchesChain, "does not chain", nil},
		{"schema never admitted", &fakeSource{noAdmit: true}, CheckSchemaAdmitted, "not admitted through SourceHost.AdmitSchema", nil},
		{"admitted schema differs", &fakeSource{admitWrong: true}, CheckSchemaAdmitted, "value columns differ from schema 1", nil},
		{"wrong timestamp type", &fakeSource{intTimestamp: true}, CheckBatchesChain, "column __timestamp is int64, want timestamp[ms, UTC]", nil},
		{"restart ignores start positions", &fakeSource{ignoreStart: true}, CheckRestart, "SourceHost.StartPositions said to resume at", nil},
		{"unbounded buffering", &fakeSource{hugeAfterPause: true}, CheckBackpressure, "over MaxBatchRecords",
			func(c *SourceCase) { c.ReadTimeout = 20 * time.Second }}, // building the pile is slow under -race
		{"Read ignores ctx", &fakeSource{ignoreCtx: true}, CheckReadCtx, "it must return promptly when its ctx ends", nil},
		{"rows of a rejected schema", &fakeSource{ignoreRejection: true}, CheckRejectedSchema, "although the host rejected the schema", nil},
		{"config error without the key", &fakeSource{badConfigError: true}, CheckInvalidConfig, `does not name the key "rows"`,
			func(c *SourceCase) { c.InvalidConfig = map[string]string{"rows": "many"} }},
		{"commit fails", &fakeSource{failCommit: true}, CheckLifecycle, "Commit of the positions the task handed on", nil},
		{"rule only Open knows", &fakeSource{openOnlyRule: true}, CheckInvalidConfig, "but Validate accepted it",
			func(c *SourceCase) { c.InvalidConfig = map[string]string{"rows": "5000"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := fakeSourceCase(only(sourceChecks, tc.check))
			if tc.modify != nil {
				tc.modify(&c)
			}
			r := newRecorder("kit")
			sourceKit(r, InProcess(tc.source.component()), c)
			r.finish()
			expectCaught(t, r, tc.check, tc.want)
		})
	}
}

func TestSpecCheckCatches(t *testing.T) {
	tests := []struct {
		name string
		spec sdk.Spec
		want string
	}{
		{"secret not marked", sdk.NewSpec(sdk.String("sasl.password").Describe("x")), `config key "sasl.password" looks like a secret`},
		// The host hides these (sdk.IsSecretKey); a kit with a word list
		// of its own let them pass unmarked.
		{"user info not marked", sdk.NewSpec(sdk.String("registry.basic.auth.user.info").Describe("x")), `config key "registry.basic.auth.user.info" looks like a secret`},
		{"auth header not marked", sdk.NewSpec(sdk.String("catalog.header.Authorization").Describe("x")), `config key "catalog.header.Authorization" looks like a secret`},
		{"default fails validation", sdk.NewSpec(sdk.Int("rows").Default("lots")), `the default "lots" of config key "rows" fails`},
		{"default outside choices", sdk.NewSpec(sdk.String("mode").Default("fast").OneOf("slow", "safe")), `the default "fast" of config key "mode"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := (&fakeSource{}).component()
			c.Spec = tc.spec
			c.Source = &fakeSource{}
			r := newRecorder("kit")
			sourceKit(r, InProcess(c), SourceCase{Component: "fake", Skip: only(sourceChecks, CheckSpec)})
			r.finish()
			expectCaught(t, r, CheckSpec, tc.want)
		})
	}
}

var partitionerChecks = []string{CheckSpec, CheckInvalidConfig, CheckCapabilities, CheckOneWriterPerRecord, CheckDeterministic, CheckConcurrent, CheckOneWriter, CheckClose, CheckColumns}

func TestPartitionerKitConforming(t *testing.T) {
	f := &fakePartitioner{}
	PartitionerKit(t, InProcess(f.component()), PartitionerCase{Component: "fakehash", Deterministic: true})
	// Declaring its columns: it then sees only those, and answers alike.
	f = &fakePartitioner{columns: []string{"customer_id"}}
	PartitionerKit(t, InProcess(f.component()), PartitionerCase{Component: "fakehash", Deterministic: true})
}

func TestPartitionerKitCatches(t *testing.T) {
	tests := []struct {
		name  string
		p     *fakePartitioner
		check string
		want  string
	}{
		{"index out of range", &fakePartitioner{outOfRange: true}, CheckOneWriterPerRecord, "outside [0, 4)"},
		{"load declared, not served", &fakePartitioner{claimsLoad: true}, CheckCapabilities, `declares capability "load"`},
		{"one index short", &fakePartitioner{short: true}, CheckOneWriterPerRecord, "returned 499 writer indexes for 500 records"},
		{"not deterministic", &fakePartitioner{random: true}, CheckDeterministic, "on the same input"},
		{"differs under concurrency", &fakePartitioner{shared: true}, CheckConcurrent, "under concurrent calls"},
		{"ignores the writer count", &fakePartitioner{fixed: true}, CheckOneWriter, "outside [0, 1)"},
		{"close fails", &fakePartitioner{failClose: true}, CheckClose, "Close: "},
		{"reads an undeclared column", &fakePartitioner{columns: []string{"customer_id"}, peeks: true}, CheckColumns, "reads a column it does not declare"},
		{"declares a column no batch has", &fakePartitioner{columns: []string{"customer_id", "nope"}}, CheckColumns, `declares column "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder("kit")
			partitionerKit(r, InProcess(tc.p.component()), PartitionerCase{
				Component: "fakehash", Deterministic: true, Skip: only(partitionerChecks, tc.check),
			})
			r.finish()
			expectCaught(t, r, tc.check, tc.want)
		})
	}
}

var sinkChecks = []string{CheckSpec, CheckInvalidConfig, CheckCapabilities, CheckWriteFlushCommit, CheckEmptyCheckpoint, CheckPipelined,
	CheckFrontierReopen, CheckOffsetsReset, CheckSuperseded, CheckCommitterTask, CheckPrepareSchema, CheckClose}

func freshTable(t testing.TB) map[string]string {
	return map[string]string{"table": t.Name()}
}

func TestSinkKitConforming(t *testing.T) {
	f := &fakeSink{}
	SinkKit(t, InProcess(f.component()), SinkCase{Component: "fakesink", FreshConfig: freshTable})
}

func TestSinkKitCatches(t *testing.T) {
	tests := []struct {
		name  string
		s     *fakeSink
		check string
		want  string
	}{
		{"result for an idle writer", &fakeSink{phantomResults: true}, CheckEmptyCheckpoint, "which got no records in checkpoint 1"},
		{"flush mixes checkpoints", &fakeSink{mixCheckpoints: true}, CheckPipelined, "Flush(1) results count"},
		{"frontier lags", &fakeSink{wrongFrontier: true}, CheckWriteFlushCommit, "the Next of the committed range"},
		{"empty commit fails", &fakeSink{failEmpty: true}, CheckEmptyCheckpoint, "Commit(1): "},
		{"frontier lost on reopen", &fakeSink{forget: true}, CheckFrontierReopen, "after reopening the sink,"},
		{"offsets reset ignored", &fakeSink{ignoreReset: true}, CheckOffsetsReset, "where the offsets reset put it"},
		{"superseded committer accepted", &fakeSink{backwardIDs: true}, CheckSuperseded, "a second task's Commit(2) of partition"},
		{"committer's open resets the writers", &fakeSink{openResets: true}, CheckCommitterTask, "Flush(2) results count 0"},
		{"frontier not declared", &fakeSink{undeclared: true}, CheckCapabilities, `does not declare capability "frontier"`},
		{"waits while healthy", &fakeSink{stuckWaits: true}, CheckCapabilities, "says it waits for [{catalog at memory"},
		{"missing required key", &fakeSink{}, CheckInvalidConfig, "Open accepted the config"},
		{"prepare not idempotent", &fakeSink{badPrepare: true}, CheckPrepareSchema, "PrepareSchema 1: "},
		{"close fails", &fakeSink{failClose: true}, CheckClose, "Close: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := SinkCase{Component: "fakesink", FreshConfig: freshTable, Skip: only(sinkChecks, tc.check)}
			if tc.name == "missing required key" {
				// Broken on purpose: the case's "bad" value is accepted.
				c.InvalidConfig = map[string]string{"table": "another"}
			}
			r := newRecorder("kit")
			sinkKit(r, InProcess(tc.s.component()), c)
			r.finish()
			expectCaught(t, r, tc.check, tc.want)
		})
	}
}

var maintenanceChecks = []string{CheckSpec, CheckInvalidConfig, CheckCycle, CheckDryRun, CheckConcurrentStatus, CheckClose}

func TestMaintenanceKitConforming(t *testing.T) {
	f := &fakeMaintenance{}
	MaintenanceKit(t, InProcess(f.component()), MaintenanceCase{Component: "fakemaint"})
}

func TestMaintenanceKitCatches(t *testing.T) {
	tests := []struct {
		name  string
		m     *fakeMaintenance
		check string
		want  string
	}{
		{"dry run writes", &fakeMaintenance{dryRunWrites: true}, CheckDryRun, "a dry run changed table db.t: [data files 10 → 1"},
		{"run without a table", &fakeMaintenance{sloppyRuns: true}, CheckCycle, "Cycle reported a run without its table or task"},
		{"status blocked by a cycle", &fakeMaintenance{busyStatus: true}, CheckConcurrentStatus, "Status while a Cycle runs"},
		{"close fails", &fakeMaintenance{failClose: true}, CheckClose, "Close: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder("kit")
			maintenanceKit(r, InProcess(tc.m.component()), MaintenanceCase{Component: "fakemaint", Skip: only(maintenanceChecks, tc.check)})
			r.finish()
			expectCaught(t, r, tc.check, tc.want)
		})
	}
}
