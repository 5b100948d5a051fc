package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/floehq/floe/sdk"
)

// Metrics is a worker's set of collectors and the registry that holds them.
// It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	recordsIn          *prometheus.CounterVec
	bytesIn            *prometheus.CounterVec
	recordsOut         *prometheus.CounterVec
	batchesInFlight    *prometheus.GaugeVec
	checkpoints        *prometheus.CounterVec
	checkpointDuration *prometheus.HistogramVec
	commits            *prometheus.CounterVec
	commitFailures     *prometheus.CounterVec
	commitDuration     *prometheus.HistogramVec
	commitLag          *prometheus.GaugeVec
	pendingCheckpoints *prometheus.GaugeVec
	filesWritten       *prometheus.CounterVec
	pluginRestarts     *prometheus.CounterVec
	restarts           *prometheus.CounterVec
	deadLetters        *prometheus.CounterVec
	skipped            *prometheus.CounterVec
	writerLoad         *prometheus.GaugeVec

	maintRuns      *prometheus.CounterVec
	maintDuration  *prometheus.HistogramVec
	maintLastRun   *prometheus.GaugeVec
	maintLastFiles *prometheus.GaugeVec
	tables         tableGauges
}

// maintenanceBuckets spans 10 ms to about 20 min: a run that finds
// nothing to do, and a compaction of a big backlog.
var maintenanceBuckets = prometheus.ExponentialBuckets(0.01, 2, 17)

// latencyBuckets spans 5 ms to about 80 s, enough for a 1 s commit
// interval and for a commit stuck in retries alike.
var latencyBuckets = prometheus.ExponentialBuckets(0.005, 2, 15)

// New creates the collectors in a fresh registry, together with the Go
// runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	conn := []string{"connector"}
	task := []string{"connector", "task"}
	m := &Metrics{
		reg: reg,
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_records_in_total", Help: "Records read from the source, per task.",
		}, task),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_bytes_in_total", Help: "Bytes of batches (Arrow IPC) read from the source, per task.",
		}, task),
		recordsOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_records_out_total", Help: "Records made visible by sink commits.",
		}, conn),
		batchesInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_batches_in_flight", Help: "Batches read but not yet acknowledged by the sink, per task.",
		}, task),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_checkpoints_total", Help: "Checkpoints flushed (empty checkpoints are not counted).",
		}, conn),
		checkpointDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "floe_checkpoint_duration_seconds", Help: "Time from a checkpoint barrier to the end of its flush.",
			Buckets: latencyBuckets,
		}, conn),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_commits_total", Help: "Checkpoints committed by the sink.",
		}, conn),
		commitFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_commit_failures_total", Help: "Failed commit attempts (each is retried up to the limit).",
		}, conn),
		commitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "floe_commit_duration_seconds", Help: "Time the sink took to commit a checkpoint, retries included.",
			Buckets: latencyBuckets,
		}, conn),
		commitLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_commit_lag_seconds", Help: "At the last commit: now minus the receive time of the oldest batch it covered.",
		}, conn),
		pendingCheckpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_pending_checkpoints", Help: "Checkpoints flushed or flushing and not yet committed.",
		}, conn),
		filesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_files_written_total", Help: "Data files written by the sink's writers.",
		}, conn),
		pluginRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_plugin_restarts_total", Help: "Plugin process restarts after a crash, per plugin kind.",
		}, []string{"connector", "kind"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_restarts_total", Help: "Restarts of a failed connector or task by the restart policy (errors.retry.timeout), per instance (connector or task).",
		}, []string{"connector", "instance"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_dead_letters_total", Help: "Records sent to the dead-letter queue (or only logged when no DLQ topic is set).",
		}, conn),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_records_skipped_total", Help: "Records the sink dropped on purpose, neither written nor dead-lettered (the iceberg sink's records that reach no table, iceberg.tables.unrouted=skip).",
		}, conn),
		writerLoad: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_writer_load", Help: "Per-writer load as the partitioner reports it (1.0 = even share).",
		}, []string{"connector", "writer"}),
		maintRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_maintenance_runs_total", Help: "Maintenance task runs, per table, task and result (ok or failed).",
		}, []string{"connector", "table", "task", "result"}),
		maintDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "floe_maintenance_run_duration_seconds", Help: "Duration of maintenance task runs, per table and task.",
			Buckets: maintenanceBuckets,
		}, []string{"connector", "table", "task"}),
		maintLastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_maintenance_last_run_timestamp_seconds", Help: "When the last run of a maintenance task on a table ended (Unix time).",
		}, []string{"connector", "table", "task"}),
		maintLastFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_maintenance_last_run_files", Help: "What the last run of a task counted before and after it (when): data files for rewrite-data-files, manifests for rewrite-manifests, snapshots for expire-snapshots, metadata.json files for delete-metadata-files, orphans for delete-orphan-files.",
		}, []string{"connector", "table", "task", "when"}),
		tables: newTableGauges(),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.recordsIn, m.bytesIn, m.recordsOut, m.batchesInFlight,
		m.checkpoints, m.checkpointDuration, m.commits, m.commitFailures,
		m.commitDuration, m.commitLag, m.pendingCheckpoints, m.filesWritten,
		m.pluginRestarts, m.restarts, m.deadLetters, m.skipped, m.writerLoad,
		m.maintRuns, m.maintDuration, m.maintLastRun, m.maintLastFiles,
	)
	m.tables.register(reg)
	return m
}

// Registry returns the registry to serve on /metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Connector returns the view of one connector's series.
func (m *Metrics) Connector(name string) *Connector {
	return &Connector{m: m, name: name}
}

// Forget removes every series of a connector (after it is deleted).
func (m *Metrics) Forget(name string) {
	l := prometheus.Labels{"connector": name}
	m.recordsIn.DeletePartialMatch(l)
	m.bytesIn.DeletePartialMatch(l)
	m.recordsOut.DeletePartialMatch(l)
	m.batchesInFlight.DeletePartialMatch(l)
	m.checkpoints.DeletePartialMatch(l)
	m.checkpointDuration.DeletePartialMatch(l)
	m.commits.DeletePartialMatch(l)
	m.commitFailures.DeletePartialMatch(l)
	m.commitDuration.DeletePartialMatch(l)
	m.commitLag.DeletePartialMatch(l)
	m.pendingCheckpoints.DeletePartialMatch(l)
	m.filesWritten.DeletePartialMatch(l)
	m.pluginRestarts.DeletePartialMatch(l)
	m.restarts.DeletePartialMatch(l)
	m.deadLetters.DeletePartialMatch(l)
	m.skipped.DeletePartialMatch(l)
	m.writerLoad.DeletePartialMatch(l)
	m.maintRuns.DeletePartialMatch(l)
	m.maintDuration.DeletePartialMatch(l)
	m.maintLastRun.DeletePartialMatch(l)
	m.maintLastFiles.DeletePartialMatch(l)
	m.tables.forget(l)
}

// Connector records one connector's series. A nil *Connector records
// nothing, so code under test may pass none. Methods are safe for
// concurrent use.
type Connector struct {
	m    *Metrics
	name string
}

// RecordsIn counts records and bytes a task read.
func (c *Connector) RecordsIn(task int, records, bytes int64) {
	if c == nil {
		return
	}
	t := strconv.Itoa(task)
	c.m.recordsIn.WithLabelValues(c.name, t).Add(float64(records))
	c.m.bytesIn.WithLabelValues(c.name, t).Add(float64(bytes))
}

// BatchesInFlight moves a task's in-flight gauge by delta.
func (c *Connector) BatchesInFlight(task int, delta int) {
	if c == nil {
		return
	}
	c.m.batchesInFlight.WithLabelValues(c.name, strconv.Itoa(task)).Add(float64(delta))
}

// Checkpoint records a flushed checkpoint: d is barrier to flush done.
func (c *Connector) Checkpoint(d time.Duration, files int) {
	if c == nil {
		return
	}
	c.m.checkpoints.WithLabelValues(c.name).Inc()
	c.m.checkpointDuration.WithLabelValues(c.name).Observe(d.Seconds())
	c.m.filesWritten.WithLabelValues(c.name).Add(float64(files))
}

// Commit records a committed checkpoint: d is the commit's duration with
// retries, lag is now minus the receive time of its oldest batch.
func (c *Connector) Commit(d, lag time.Duration, records int64) {
	if c == nil {
		return
	}
	c.m.commits.WithLabelValues(c.name).Inc()
	c.m.commitDuration.WithLabelValues(c.name).Observe(d.Seconds())
	c.m.commitLag.WithLabelValues(c.name).Set(lag.Seconds())
	c.m.recordsOut.WithLabelValues(c.name).Add(float64(records))
}

// CommitFailure counts one failed commit attempt.
func (c *Connector) CommitFailure() {
	if c == nil {
		return
	}
	c.m.commitFailures.WithLabelValues(c.name).Inc()
}

// PendingCheckpoints sets how many checkpoints wait for their commit.
func (c *Connector) PendingCheckpoints(n int) {
	if c == nil {
		return
	}
	c.m.pendingCheckpoints.WithLabelValues(c.name).Set(float64(n))
}

// PluginRestart counts a restart of the plugin process of a kind.
func (c *Connector) PluginRestart(kind string) {
	if c == nil {
		return
	}
	c.m.pluginRestarts.WithLabelValues(c.name, kind).Inc()
}

// Restart counts a restart of the failed connector (whole) or of one of
// its tasks by the restart policy.
func (c *Connector) Restart(whole bool) {
	if c == nil {
		return
	}
	instance := "task"
	if whole {
		instance = "connector"
	}
	c.m.restarts.WithLabelValues(c.name, instance).Inc()
}

// DeadLetters counts records sent to the dead-letter queue.
func (c *Connector) DeadLetters(n int) {
	if c == nil {
		return
	}
	c.m.deadLetters.WithLabelValues(c.name).Add(float64(n))
}

// Skipped counts records the sink dropped on purpose (see
// sdk.SinkTaskWithSkips). The series appears with the first flush, so
// that a connector that skips nothing shows 0 rather than nothing.
func (c *Connector) Skipped(n int64) {
	if c == nil {
		return
	}
	c.m.skipped.WithLabelValues(c.name).Add(float64(n))
}

// WriterLoad sets the per-writer load the partitioner reported.
func (c *Connector) WriterLoad(load []float64) {
	if c == nil {
		return
	}
	for i, v := range load {
		c.m.writerLoad.WithLabelValues(c.name, strconv.Itoa(i)).Set(v)
	}
}

// MaintenanceRun records one run of a maintenance task.
func (c *Connector) MaintenanceRun(r sdk.TaskRun) {
	if c == nil {
		return
	}
	result := "ok"
	if r.Error != "" {
		result = "failed"
	}
	c.m.maintRuns.WithLabelValues(c.name, r.Table, r.Task, result).Inc()
	c.m.maintDuration.WithLabelValues(c.name, r.Table, r.Task).Observe(r.Duration.Seconds())
	c.m.maintLastRun.WithLabelValues(c.name, r.Table, r.Task).Set(float64(r.Started.Add(r.Duration).UnixMilli()) / 1000)
	if r.Error == "" {
		c.m.maintLastFiles.WithLabelValues(c.name, r.Table, r.Task, "before").Set(float64(r.FilesBefore))
		c.m.maintLastFiles.WithLabelValues(c.name, r.Table, r.Task, "after").Set(float64(r.FilesAfter))
	}
}

// TableHealth sets a table's health gauges as the maintenance plugin
// measured them.
func (c *Connector) TableHealth(h sdk.TableHealth) {
	if c == nil {
		return
	}
	c.m.tables.set(c.name, h)
}
