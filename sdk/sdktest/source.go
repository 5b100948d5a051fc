package sdktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// SourceCase describes a source for [SourceKit]. Only Component and a
// valid Config are required; the rest have defaults.
type SourceCase struct {
	// Component is the source's name in the target.
	Component string
	// Config is a valid connector config for it.
	Config map[string]string
	// FreshConfig, when set, is called instead of using Config at the start
	// of every check, for sources that need fresh state (a new topic, a new
	// folder).
	FreshConfig func(t testing.TB) map[string]string
	// Tasks is the connector's task count; the kit runs task 0 (default 1).
	Tasks int
	// Records is how many records the reading checks read (default 1000),
	// unless the input ends first.
	Records int
	// MaxBatchRecords bounds the records of one batch (default 100,000):
	// a source must buffer a bounded amount.
	MaxBatchRecords int
	// Pause is how long the backpressure check leaves the task unread
	// (default 2 s).
	Pause time.Duration
	// ReadTimeout is how long the kit waits for the source to produce
	// anything before it gives up (default 10 s).
	ReadTimeout time.Duration
	// InvalidConfig maps keys to values Open must refuse, naming the key,
	// and so must Validate for keys the component declares. Each is set
	// on top of Config, so a value may break a rule between keys. When
	// empty, the kit derives up to three from the spec, and skips the
	// check if it can derive none.
	InvalidConfig map[string]string
	// NotSecret lists keys whose names look like secrets but are not.
	NotSecret []string
	// Skip names checks that do not apply to this source.
	Skip []string
	// Timeout bounds each check (default 2 min).
	Timeout time.Duration
}

// The source kit's checks, in the order they run.
const (
	CheckSpec           = "spec"
	CheckInvalidConfig  = "invalid_config"
	CheckLifecycle      = "lifecycle"
	CheckBatchesChain   = "batches_chain"
	CheckSchemaAdmitted = "schema_admitted"
	CheckRejectedSchema = "rejected_schema"
	CheckRestart        = "restart"
	CheckBackpressure   = "backpressure"
	CheckReadCtx        = "read_honours_ctx"
	CheckTransport      = "transport"
)

// SourceKit runs the source conformance checks against target, each as a
// named subtest with a fresh plugin process:
//
//   - spec: the config declaration is well formed (unique keys, known
//     types, defaults that pass their own validation, secrets marked as
//     such) and the case's Config is valid.
//   - invalid_config: Open refuses a bad config with an error naming the
//     key, and, for a key the component declares, Validate
//     (config/validate) refuses it too, under that key.
//   - lifecycle: Open, Read, Commit of the positions read, Close; calls
//     after Close fail.
//   - batches_chain: per partition each batch's From is the previous Next,
//     offsets rise inside [From, Next), the metadata columns are present
//     with their types and follow the value columns, NumRecords matches,
//     batches stay under MaxBatchRecords; after the end of input, Read
//     keeps saying so.
//   - schema_admitted: every batch's schema was admitted through
//     SourceHost.AdmitSchema before the batch was returned, and the batch's
//     value columns match the admitted Arrow schema.
//   - rejected_schema: with every schema rejected, no rows are handed on;
//     the source dead-letters them or fails with the rejection.
//   - restart: after Close, a task reopened with StartPositions at the last
//     Next of each partition resumes exactly there.
//   - backpressure: a task left unread for Pause does not fail, and the
//     next Read returns at most max batches of bounded size.
//   - read_honours_ctx: Read returns promptly when its ctx's deadline
//     passes or ctx is cancelled.
//   - transport: the batches check out over both of floe's transports:
//     plain gRPC with batches in shared memory (floe's default, and every
//     other check's; a plugin built with this SDK sends them so), and
//     go-plugin's AutoMTLS with batches as bytes (plugin.transport.tls=
//     true, plugin.transport.shared.memory=false).
func SourceKit(t *testing.T, target Target, c SourceCase) {
	t.Helper()
	sourceKit(tAdapter{t}, target, c)
}

type sourceKitRun struct {
	target Target
	c      SourceCase
}

func sourceKit(t tb, target Target, c SourceCase) {
	if c.Component == "" {
		t.Fatal("sdktest.SourceKit: the case names no Component")
	}
	if c.Tasks <= 0 {
		c.Tasks = 1
	}
	if c.Records <= 0 {
		c.Records = 1000
	}
	if c.MaxBatchRecords <= 0 {
		c.MaxBatchRecords = 100_000
	}
	if c.Pause <= 0 {
		c.Pause = 2 * time.Second
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	k := &sourceKitRun{target: target, c: c}
	checks := []struct {
		name string
		fn   func(t tb, s *session, cfg map[string]string)
	}{
		{CheckSpec, k.spec},
		{CheckInvalidConfig, k.invalidConfig},
		{CheckLifecycle, k.lifecycle},
		{CheckBatchesChain, k.batchesChain},
		{CheckSchemaAdmitted, k.schemaAdmitted},
		{CheckRejectedSchema, k.rejectedSchema},
		{CheckRestart, k.restart},
		{CheckBackpressure, k.backpressure},
		{CheckReadCtx, k.readCtx},
		{CheckTransport, k.transport},
	}
	for _, ch := range checks {
		t.run(ch.name, func(t tb) {
			skipIf(t, c.Skip, ch.name)
			s := newSession(t, target, c.Timeout)
			ch.fn(t, s, k.config(t))
		})
	}
}

func (k *sourceKitRun) config(t tb) map[string]string {
	if k.c.FreshConfig != nil {
		return k.c.FreshConfig(t)
	}
	return maps.Clone(k.c.Config)
}

func (k *sourceKitRun) open(t tb, s *session, h *recordingHost, cfg map[string]string) *client.SourceTask {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	task, err := s.p.OpenSource(ctx, client.SourceOpen{
		Component: k.c.Component, Connector: "sdktest", Task: 0, Tasks: k.c.Tasks, Config: cfg, Host: h,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return task
}

func closeTask(t tb, s *session, task *client.SourceTask) {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func (k *sourceKitRun) spec(t tb, s *session, cfg map[string]string) {
	checkSpec(t, s, sdk.KindSource, k.c.Component, cfg, k.c.NotSecret)
}

func (k *sourceKitRun) invalidConfig(t tb, s *session, cfg map[string]string) {
	comp := s.describe(sdk.KindSource, k.c.Component)
	checkInvalidConfig(t, s, comp, invalidConfigs(comp, cfg, k.c.InvalidConfig), func(bad map[string]string) (func(), error) {
		ctx, cancel := s.callCtx(callTimeout)
		defer cancel()
		task, err := s.p.OpenSource(ctx, client.SourceOpen{
			Component: k.c.Component, Connector: "sdktest", Task: 0, Tasks: k.c.Tasks, Config: bad, Host: newRecordingHost(nil),
		})
		if err != nil {
			return nil, err
		}
		return func() { closeTask(t, s, task) }, nil
	})
}

func (k *sourceKitRun) lifecycle(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	task := k.open(t, s, h, cfg)
	chk := newChainChecker(t, h, k.c.MaxBatchRecords)
	k.read(t, s, task, 1, 4, chk)
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	if err := task.Commit(ctx, chk.positions()); err != nil {
		t.Errorf("Commit of the positions the task handed on (%v): %v", chk.positions(), err)
	}
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := task.Read(ctx, 1); err == nil {
		t.Errorf("Read after Close succeeded; the task's handle must be gone")
	}
}

func (k *sourceKitRun) batchesChain(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	task := k.open(t, s, h, cfg)
	defer closeTask(t, s, task)
	chk := newChainChecker(t, h, k.c.MaxBatchRecords)
	_, eoi := k.read(t, s, task, k.c.Records, 8, chk)
	if chk.batches == 0 {
		t.Fatalf("no batch to check")
	}
	if eoi {
		ctx, cancel := s.callCtx(callTimeout)
		defer cancel()
		res, err := task.Read(ctx, 4)
		switch {
		case err != nil:
			t.Errorf("Read after the end of input: %v", err)
		case !res.EndOfInput || len(res.Batches) > 0:
			t.Errorf("Read after the end of input returned %d batches, EndOfInput=%v; want none and true", len(res.Batches), res.EndOfInput)
		}
	}
}

func (k *sourceKitRun) schemaAdmitted(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	task := k.open(t, s, h, cfg)
	defer closeTask(t, s, task)
	chk := newChainChecker(t, h, k.c.MaxBatchRecords)
	chk.checkSchemas = true
	k.read(t, s, task, k.c.Records, 8, chk)
}

func (k *sourceKitRun) rejectedSchema(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	h.reject = true
	task := k.open(t, s, h, cfg)
	defer closeTask(t, s, task)
	deadline := time.Now().Add(k.c.ReadTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := s.callCtx(time.Second)
		res, err := task.Read(ctx, 8)
		cancel()
		if err != nil {
			if !errors.Is(err, sdk.ErrSchemaRejected) {
				t.Errorf("after the host rejected its schema, Read failed with an error that does not wrap sdk.ErrSchemaRejected: %v", err)
			}
			return
		}
		for _, b := range res.Batches {
			if b.NumRecords > 0 {
				t.Fatalf("Read returned %d rows of schema %d in batch %s [%d, %d) although the host rejected the schema; "+
					"a rejected schema's records go to SourceHost.DeadLetter", b.NumRecords, b.SchemaID, b.Partition, b.From, b.Next)
			}
		}
		if h.deadLetterCount() > 0 {
			return
		}
		if res.EndOfInput {
			break
		}
	}
	if h.deadLetterCount() == 0 {
		t.Errorf("after the host rejected its schema, the source neither failed nor dead-lettered a record within %v", k.c.ReadTimeout)
	}
}

func (k *sourceKitRun) restart(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	task := k.open(t, s, h, cfg)
	chk := newChainChecker(t, h, k.c.MaxBatchRecords)
	_, eoi := k.read(t, s, task, max(k.c.Records/2, 1), 4, chk)
	closeTask(t, s, task)
	positions := chk.positions()
	if len(positions) == 0 {
		t.Fatalf("no batch before the restart")
	}

	h2 := newRecordingHost(positions)
	task = k.open(t, s, h2, cfg)
	defer closeTask(t, s, task)
	chk2 := newChainChecker(t, h2, k.c.MaxBatchRecords)
	chk2.expect = maps.Clone(positions)
	// Every partition's first batch must start where StartPositions
	// said. A partition read to its end before the restart has nothing
	// more, so the wait ends at the first empty Read once batches came.
	deadline := time.Now().Add(k.c.ReadTimeout)
	got := 0
	for len(chk2.expect) > 0 && time.Now().Before(deadline) {
		ctx, cancel := s.callCtx(time.Second)
		res, err := task.Read(ctx, 8)
		cancel()
		if err != nil {
			t.Fatalf("Read after the restart: %v", err)
		}
		for _, b := range res.Batches {
			chk2.check(b)
		}
		got += len(res.Batches)
		if res.EndOfInput || (got > 0 && len(res.Batches) == 0) {
			break
		}
	}
	if h2.startPositionCalls() == 0 {
		t.Errorf("the reopened task never asked SourceHost.StartPositions where to resume")
	}
	if got == 0 && !eoi {
		t.Errorf("after the restart no batch came within %v (expected to resume at %v)", k.c.ReadTimeout, chk2.expect)
	}
}

func (k *sourceKitRun) transport(t tb, s *session, cfg map[string]string) {
	for _, tr := range []struct {
		name string
		s    func() *session
		tr   transport
	}{
		{"plain, shared memory", func() *session { return s }, defaultTransport},
		{"TLS, bytes", func() *session { return newSessionWith(t, k.target, k.c.Timeout, transport{tls: true}) }, transport{tls: true}},
	} {
		s := tr.s()
		h := newRecordingHost(nil)
		task := k.open(t, s, h, cfg)
		chk := newChainChecker(t, h, k.c.MaxBatchRecords)
		k.read(t, s, task, min(k.c.Records, 100), 4, chk)
		closeTask(t, s, task)
		switch {
		case !tr.tr.shared && chk.shared > 0:
			t.Errorf("%s: %d batches came in shared memory although the host did not accept it", tr.name, chk.shared)
		case tr.tr.shared && chk.withRows > 0 && chk.shared == 0 && client.SharedMemorySupported():
			t.Logf("%s: the batches came as bytes (floe accepts both; a plugin built with this SDK shares them)", tr.name)
		}
		if chk.batches == 0 {
			t.Errorf("%s: no batch", tr.name)
		}
	}
}

func (k *sourceKitRun) backpressure(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	task := k.open(t, s, h, cfg)
	defer closeTask(t, s, task)
	chk := newChainChecker(t, h, k.c.MaxBatchRecords)
	if _, eoi := k.read(t, s, task, 1, 1, chk); eoi {
		t.Skip("the input ended before the pause")
	}
	time.Sleep(k.c.Pause)
	// Whatever piled up must come in batches of bounded size, at most max
	// per Read; read until some came (a source that built a pile may be
	// slow to answer).
	before := chk.batches
	for _, max := range []int{1, 2} {
		if _, eoi := k.read(t, s, task, 1, max, chk); eoi {
			break
		}
	}
	if chk.batches == before {
		t.Errorf("no batch within %v after %v unread", k.c.ReadTimeout, k.c.Pause)
	}
}

func (k *sourceKitRun) readCtx(t tb, s *session, cfg map[string]string) {
	h := newRecordingHost(nil)
	task := k.open(t, s, h, cfg)
	defer closeTask(t, s, task)
	const wait = 2 * time.Second
	// A deadline: the SDK hands the source a slightly earlier one, so a
	// source that honours it answers before the call times out.
	ctx, cancel := s.callCtx(wait)
	res, err := task.Read(ctx, 1)
	cancel()
	if err != nil {
		t.Errorf("Read with a %v deadline failed: %v; it must return what it has, or nothing, without an error", wait, err)
	}
	if res.TimedOut {
		t.Fatalf("Read did not answer within its %v deadline; it must return promptly when its ctx ends", wait)
	}
	// A cancellation: the call ends at once; the source must then be ready
	// for the next Read in time.
	ctx, cancel = context.WithCancel(s.ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := task.Read(ctx, 1); err != nil {
		t.Errorf("Read cancelled after 300ms failed: %v; it must return without an error", err)
	}
	cancel()
	ctx, cancel = s.callCtx(wait)
	res, err = task.Read(ctx, 1)
	cancel()
	if err != nil {
		t.Errorf("Read after a cancelled Read: %v", err)
	}
	if res.TimedOut {
		t.Errorf("Read after a cancelled Read did not answer within %v; the cancelled Read must return promptly when its ctx ends", wait)
	}
}

// read reads until at least want records came, the input ended, or nothing
// came for ReadTimeout. Every batch goes through chk.
func (k *sourceKitRun) read(t tb, s *session, task *client.SourceTask, want, max int, chk *chainChecker) (records int64, eoi bool) {
	t.Helper()
	idle := time.Now().Add(k.c.ReadTimeout)
	for records < int64(want) {
		ctx, cancel := s.callCtx(time.Second)
		res, err := task.Read(ctx, max)
		cancel()
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(res.Batches) > max {
			t.Errorf("Read(max=%d) returned %d batches", max, len(res.Batches))
		}
		for _, b := range res.Batches {
			chk.check(b)
			records += b.NumRecords
			b.Release()
		}
		if res.EndOfInput {
			return records, true
		}
		if len(res.Batches) > 0 {
			idle = time.Now().Add(k.c.ReadTimeout)
		} else if time.Now().After(idle) {
			if chk.batches == 0 {
				t.Fatalf("no batch within %v; is the case's Config pointing at data?", k.c.ReadTimeout)
			}
			t.Logf("the source went quiet after %d records (wanted %d); checking those", records, want)
			break
		}
	}
	return records, false
}

// maxErrors stops a check that finds the same problem in every batch.
const maxErrors = 10

// chainChecker checks every batch a source returns.
type chainChecker struct {
	t            tb
	h            *recordingHost
	maxRecords   int
	checkSchemas bool
	next         map[string]int64 // each partition's last Next
	expect       map[string]int64 // where a partition must resume (restart)
	batches      int
	withRows     int // batches that carry rows
	shared       int // of those, the ones in shared memory
	errors       int
}

func newChainChecker(t tb, h *recordingHost, maxRecords int) *chainChecker {
	return &chainChecker{t: t, h: h, maxRecords: maxRecords, next: map[string]int64{}}
}

func (c *chainChecker) positions() map[string]int64 { return maps.Clone(c.next) }

func (c *chainChecker) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf(format, args...)
	c.errors++
	if c.errors >= maxErrors {
		c.t.Fatalf("stopping after %d problems", c.errors)
	}
}

func (c *chainChecker) check(b client.Batch) {
	c.t.Helper()
	c.batches++
	if b.HasRows() {
		c.withRows++
		if b.Shared() {
			c.shared++
		}
	}
	label := fmt.Sprintf("batch %s [%d, %d)", b.Partition, b.From, b.Next)
	if b.Partition == "" {
		c.errorf("%s names no partition", label)
	}
	if want, ok := c.expect[b.Partition]; ok {
		if b.From != want {
			c.errorf("%s is the first after the restart, but SourceHost.StartPositions said to resume at %d", label, want)
		}
		delete(c.expect, b.Partition)
	}
	if prev, ok := c.next[b.Partition]; ok && b.From != prev {
		kind := "a gap"
		if b.From < prev {
			kind = "an overlap"
		}
		c.errorf("%s does not chain: the previous batch of the partition ended at Next=%d (%s)", label, prev, kind)
	}
	c.next[b.Partition] = b.Next
	switch {
	case b.Next < b.From:
		c.errorf("%s has Next before From", label)
	case b.Next == b.From:
		c.errorf("%s covers no positions; a source returns no batch rather than an empty one", label)
	case b.Skipped < 0 || b.NumRecords+b.Skipped > b.Next-b.From:
		c.errorf("%s holds %d records and %d skipped, more than the %d positions it covers", label, b.NumRecords, b.Skipped, b.Next-b.From)
	}
	if c.maxRecords > 0 && b.NumRecords > int64(c.maxRecords) {
		c.errorf("%s holds %d records, over MaxBatchRecords=%d; a source must buffer a bounded amount", label, b.NumRecords, c.maxRecords)
	}
	if b.NumRecords == 0 {
		return
	}
	admitted, ok := c.h.admittedSchema(b.SchemaID)
	if !ok {
		c.errorf("%s carries schema %d, which was not admitted through SourceHost.AdmitSchema before the batch was returned", label, b.SchemaID)
	}
	rec, err := b.Decode(nil)
	if err != nil {
		c.errorf("%s: %v", label, err)
		return
	}
	defer rec.Release()
	if rec.NumRows() != b.NumRecords {
		c.errorf("%s says NumRecords=%d but its Arrow data has %d rows", label, b.NumRecords, rec.NumRows())
	}
	c.checkColumns(label, rec.Schema())
	c.checkOffsets(label, b, rec)
	if c.checkSchemas && ok {
		if as, err := admitted.Arrow(); err != nil {
			c.errorf("schema %d as admitted: %v", b.SchemaID, err)
		} else if as != nil {
			if diff := schemaDiff(as, valueSchema(rec.Schema())); diff != "" {
				c.errorf("%s: its value columns differ from schema %d as admitted: %s", label, b.SchemaID, diff)
			}
		}
	}
}

func (c *chainChecker) checkColumns(label string, s *arrow.Schema) {
	c.t.Helper()
	seenMeta := false
	has := map[string]bool{}
	for _, f := range s.Fields() {
		if !sdk.IsMetadataColumn(f.Name) {
			if seenMeta {
				c.errorf("%s: value column %q comes after metadata columns; metadata columns go last", label, f.Name)
			}
			continue
		}
		seenMeta = true
		has[f.Name] = true
		var ok bool
		var want string
		switch f.Name {
		case sdk.ColumnOffset:
			ok, want = f.Type.ID() == arrow.INT64, "int64"
		case sdk.ColumnTimestamp:
			ts, isTS := f.Type.(*arrow.TimestampType)
			ok, want = isTS && ts.Unit == arrow.Millisecond && isUTC(ts.TimeZone), "timestamp[ms, UTC]"
		case sdk.ColumnKey:
			ok, want = f.Type.ID() == arrow.BINARY, "binary"
		case sdk.ColumnHeaders:
			m, isMap := f.Type.(*arrow.MapType)
			ok, want = isMap && m.KeyType().ID() == arrow.STRING && m.ItemType().ID() == arrow.BINARY, "map<string, binary>"
		default:
			c.errorf("%s has column %q: names starting with \"__\" are reserved for floe's metadata columns", label, f.Name)
			continue
		}
		if !ok {
			c.errorf("%s: column %s is %s, want %s", label, f.Name, f.Type, want)
		}
	}
	for _, req := range []string{sdk.ColumnOffset, sdk.ColumnTimestamp} {
		if !has[req] {
			c.errorf("%s has no %s column", label, req)
		}
	}
}

func isUTC(tz string) bool {
	switch strings.ToUpper(tz) {
	case "UTC", "ETC/UTC", "Z", "+00:00":
		return true
	}
	return false
}

func (c *chainChecker) checkOffsets(label string, b client.Batch, rec arrow.RecordBatch) {
	c.t.Helper()
	idx := rec.Schema().FieldIndices(sdk.ColumnOffset)
	if len(idx) == 0 {
		return
	}
	col, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return
	}
	prev := b.From - 1
	for i := range col.Len() {
		if col.IsNull(i) {
			c.errorf("%s: row %d has a null %s", label, i, sdk.ColumnOffset)
			return
		}
		off := col.Value(i)
		if off <= prev {
			c.errorf("%s: offsets do not rise: row %d has offset %d after %d", label, i, off, prev)
			return
		}
		if off >= b.Next {
			c.errorf("%s: row %d has offset %d, not before Next", label, i, off)
			return
		}
		prev = off
	}
}

// schemaDiff describes how two value schemas differ by column name and
// type ("" when they match).
func schemaDiff(want, got *arrow.Schema) string {
	var diffs []string
	if want.NumFields() != got.NumFields() {
		diffs = append(diffs, fmt.Sprintf("%d columns admitted, %d in the batch", want.NumFields(), got.NumFields()))
	}
	for i := range min(want.NumFields(), got.NumFields()) {
		w, g := want.Field(i), got.Field(i)
		if w.Name != g.Name || !arrow.TypeEqual(w.Type, g.Type) {
			diffs = append(diffs, fmt.Sprintf("column %d is %s %s, admitted as %s %s", i, g.Name, g.Type, w.Name, w.Type))
		}
	}
	return strings.Join(diffs, "; ")
}
