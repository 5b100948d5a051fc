package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// API is what a floe worker offers its REST API and CLI: Kafka Connect's
// operations, with Connect's meanings. *Worker implements it.
//
// Every method takes the ctx of the request it serves: when ctx ends, a
// call still waiting (for another operation on the same connector, for a
// plugin process, for the store) returns ctx's error. Work a call hands
// on (a connector it starts, a KIP-745 restart it accepts) runs on the
// worker's lifetime, not on ctx.
//
// Errors: [ErrNotFound], [ErrExists], [ErrRebalancing] and [ErrBadState]
// wrap the cause; a config that does not validate comes back as
// *ValidationError carrying Connect's ConfigInfos.
type API interface {
	// ServerInfo answers GET /.
	ServerInfo(ctx context.Context) ServerInfo
	// Ready reports whether startup finished (GET /health).
	Ready(ctx context.Context) error

	Connectors(ctx context.Context) []string
	Connector(ctx context.Context, name string) (ConnectorInfo, error)
	ConnectorStatus(ctx context.Context, name string) (ConnectorStatus, error)
	// CreateConnector validates and starts a connector in initial state
	// (RUNNING when empty, PAUSED or STOPPED).
	CreateConnector(ctx context.Context, name string, config map[string]string, initial State) (ConnectorInfo, error)
	// PutConnectorConfig creates or replaces; created reports which.
	PutConnectorConfig(ctx context.Context, name string, config map[string]string) (info ConnectorInfo, created bool, err error)
	// PatchConnectorConfig merges patch into the config; a null value
	// (nil pointer) removes the key.
	PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (ConnectorInfo, error)
	DeleteConnector(ctx context.Context, name string) error

	// RestartConnector restarts the connector and, with includeTasks, its
	// tasks; onlyFailed limits it to FAILED instances. floe's connector
	// instance is its runtime, which holds the tasks: restarting the
	// connector restarts them too. Without flags the restart is done when
	// it returns; with a flag it goes on in the background and the status
	// returned shows the instances being restarted as RESTARTING (KIP-745).
	RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error)
	RestartTask(ctx context.Context, name string, task int) error
	Pause(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Stop(ctx context.Context, name string) error

	Tasks(ctx context.Context, name string) ([]TaskInfo, error)
	TaskStatus(ctx context.Context, name string, task int) (TaskState, error)

	// Offsets returns the positions the sink holds (the table's frontier).
	Offsets(ctx context.Context, name string) ([]Offset, error)
	// AlterOffsets and ResetOffsets need the connector STOPPED.
	AlterOffsets(ctx context.Context, name string, offsets []Offset) error
	ResetOffsets(ctx context.Context, name string) error
	// Topics lists the topics the connector has used since the last reset.
	Topics(ctx context.Context, name string) ([]string, error)
	ResetTopics(ctx context.Context, name string) error

	// Plugins lists components; connectorsOnly keeps sources and sinks.
	Plugins(ctx context.Context, connectorsOnly bool) []PluginInfo
	PluginConfig(ctx context.Context, name string) ([]ConfigDef, error)
	// Validate checks a connector config as if created with plugin
	// (the config's connector.class) and returns Connect's ConfigInfos.
	Validate(ctx context.Context, plugin string, config map[string]string) (ConfigInfos, error)

	// Tables returns table health and maintenance history of a connector.
	Tables(ctx context.Context, name string) (TablesReport, error)
}

// Errors the API wraps.
var (
	// ErrNotFound: no such connector, task or plugin (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrExists: a connector of that name exists already (HTTP 409).
	ErrExists = errors.New("already exists")
	// ErrRebalancing: the worker is rebalancing; retry (HTTP 409).
	ErrRebalancing = errors.New("cannot complete request momentarily due to rebalance")
	// ErrBadState: the operation needs another connector state (HTTP 400
	// for offsets on a connector that is not STOPPED).
	ErrBadState = errors.New("connector is not in the required state")
)

// ValidationError carries Connect's ConfigInfos for a config that does not
// validate (HTTP 400).
type ValidationError struct {
	Infos ConfigInfos
}

// MaxListedErrors bounds the errors a ValidationError's message lists;
// config/validate's ConfigInfos has them all.
const MaxListedErrors = 50

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("connector configuration is invalid and contains the following errors:")
	n := 0
	for _, c := range e.Infos.Configs {
		for _, m := range c.Value.Errors {
			if n < MaxListedErrors {
				line := c.Value.Name + ": " + m
				if len(line) > 1000 {
					line = line[:1000] + "…"
				}
				b.WriteString("\n" + line)
			}
			n++
		}
	}
	if n > MaxListedErrors {
		fmt.Fprintf(&b, "\n… and %d more errors (config/validate lists them all)", n-MaxListedErrors)
	}
	return b.String()
}

// State is a connector's or task's state, with Connect's names.
type State string

// States.
const (
	StateUnassigned State = "UNASSIGNED"
	StateRunning    State = "RUNNING"
	StatePaused     State = "PAUSED"
	StateStopped    State = "STOPPED"
	StateFailed     State = "FAILED"
	StateRestarting State = "RESTARTING"
)

// ServerInfo is the body of GET /.
type ServerInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// ConnectorInfo is Connect's connector description.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   string            `json:"type"`
}

// TaskID names a task.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// TaskInfo is one entry of GET /connectors/{c}/tasks.
type TaskInfo struct {
	ID     TaskID            `json:"id"`
	Config map[string]string `json:"config"`
}

// ConnectorStatus is Connect's status document plus floe's extras.
type ConnectorStatus struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      string         `json:"type"`
	// Floe holds what Connect has no field for: checkpoints, commits,
	// per-writer load, dead letters.
	Floe *Progress `json:"floe,omitempty"`
}

// ConnectorState is the connector part of a status.
type ConnectorState struct {
	State    State  `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// TaskState is one task's status.
type TaskState struct {
	ID       int    `json:"id"`
	State    State  `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// Progress is floe's view of a running connector.
type Progress struct {
	RecordsIn          int64     `json:"records_in"`
	RecordsOut         int64     `json:"records_out"`
	DeadLetters        int64     `json:"dead_letters"`
	Skipped            int64     `json:"skipped"`
	Checkpoint         uint64    `json:"checkpoint"`
	CommittedAt        time.Time `json:"committed_at,omitzero"`
	Commits            int64     `json:"commits"`
	FilesWritten       int64     `json:"files_written"`
	PendingCheckpoints int       `json:"pending_checkpoints"`
	WriterLoad         []float64 `json:"writer_load,omitempty"`
	PluginRestarts     int64     `json:"plugin_restarts"`
	EndOfInput         bool      `json:"end_of_input"`
	// Waiting lists the services the sink is waiting for (its catalog or
	// object store down): ingestion stalls, then resumes by itself once
	// they answer; empty while everything answers.
	Waiting []ServiceWait `json:"waiting,omitempty"`
	// Restarts counts the restart policy's restarts of the connector and
	// its tasks; Healing lists the failures it is working on.
	Restarts int64     `json:"restarts"`
	Healing  []Healing `json:"healing,omitempty"`
	// Maintenance is set when the connector has a maintenance plugin.
	Maintenance *MaintenanceSummary `json:"maintenance,omitempty"`
}

// ServiceWait is a service the connector's sink is waiting for.
type ServiceWait struct {
	// Service names it and where it is: "catalog at http://…", "object
	// store at http://…".
	Service string `json:"service"`
	// Since is when its first failed request of this outage was.
	Since time.Time `json:"since"`
	// Attempts counts the failed requests since then.
	Attempts  int64  `json:"attempts"`
	LastError string `json:"last_error"`
}

// Healing is the restart policy's work on one failed instance.
type Healing struct {
	// Instance is "connector" or "task N".
	Instance     string    `json:"instance"`
	Attempts     int       `json:"attempts"`
	FailingSince time.Time `json:"failing_since"`
	// NextAttempt is when the next restart is due; zero when none is.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	// Permanent: no restart can fix it. GaveUp: errors.retry.timeout
	// ran out. Either way it waits for a human.
	Permanent bool `json:"permanent,omitempty"`
	GaveUp    bool `json:"gave_up,omitempty"`
}

// MaintenanceSummary is what the connector's maintenance plugin did since
// the connector started; GET /connectors/{c}/tables has the full history.
type MaintenanceSummary struct {
	Runs       int64 `json:"runs"`
	FailedRuns int64 `json:"failed_runs"`
	// LastRuns holds the latest run of each task on each table.
	LastRuns []MaintenanceRun `json:"last_runs"`
	// Error says why the plugin is not running.
	Error string `json:"error,omitempty"`
}

// Offset is one entry of Connect's offsets document. When the source
// reads Kafka (the kafka component, or a source declaring
// kafka.bootstrap.servers) Partition holds kafka_topic and kafka_partition
// and Offset holds kafka_offset, as Connect's sink connectors report them;
// for other sources Partition holds partition (the source's partition
// name) and Offset holds position. PATCH accepts either shape.
type Offset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// PluginInfo is one entry of GET /connector-plugins. Class is the
// component's Kafka Connect class name when it has one (an alias that is
// a class name: org.apache.iceberg.connect.IcebergSinkConnector for
// iceberg), else floe's name, so that Connect users see the class they
// put in connector.class.
type PluginInfo struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version"`
	// Floe holds floe's own names for the component. The REST API shows
	// it only with floe=true: Connect's PluginInfo class refuses unknown
	// fields.
	Floe *PluginNames `json:"floe,omitempty"`
}

// PluginNames are the names a component answers to besides its class.
type PluginNames struct {
	// Name is floe's short name (iceberg), the one `floe plugins` lists.
	Name string `json:"name"`
	// Aliases are the other names it accepts (Connect class names).
	Aliases []string `json:"aliases"`
}

// ConfigDef is Connect's config key definition.
type ConfigDef struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         string   `json:"group"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
	Order         int      `json:"order"`
}

// ConfigInfos is Connect's answer to config/validate.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// ConfigInfo pairs a definition with the value given and its errors.
type ConfigInfo struct {
	Definition ConfigDef   `json:"definition"`
	Value      ConfigValue `json:"value"`
}

// ConfigValue is the validated value of one key. Secret values are never
// echoed: Value is then null.
type ConfigValue struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// TablesReport is floe's table-health answer for a connector.
type TablesReport struct {
	Tables []TableHealth    `json:"tables"`
	Runs   []MaintenanceRun `json:"maintenance_runs"`
}

// TableHealth is one table of GET /connectors/{c}/tables. Source says
// where its numbers come from:
//
//   - "maintenance": the connector's maintenance plugin read the table;
//     the table-wide counts (snapshots, data_files, small_files,
//     delete_files, data_bytes, records, manifests, metadata_bytes,
//     max_partition_files and max_partition, the fullest partition) are set.
//   - "commits": there is no maintenance plugin, so floe knows only what
//     the sink reported of this connector's commits since it started: the
//     last commit's snapshot_id, commits, committed_records,
//     committed_files and last_commit. The table-wide counts are unknown
//     and left out rather than shown as 0 (reading them would mean a new
//     call into the sink).
type TableHealth struct {
	Table         string `json:"table"`
	Source        string `json:"source"`
	Snapshots     *int64 `json:"snapshots,omitempty"`
	DataFiles     *int64 `json:"data_files,omitempty"`
	SmallFiles    *int64 `json:"small_files,omitempty"`
	DeleteFiles   *int64 `json:"delete_files,omitempty"`
	DataBytes     *int64 `json:"data_bytes,omitempty"`
	Records       *int64 `json:"records,omitempty"`
	Manifests     *int64 `json:"manifests,omitempty"`
	MetadataBytes *int64 `json:"metadata_bytes,omitempty"`
	// MaxPartition is the partition with the most data files, named as
	// `floe table describe` names it (ts_day=2026-01-01; "" when
	// unpartitioned), MaxPartitionFiles their count.
	MaxPartitionFiles *int64  `json:"max_partition_files,omitempty"`
	MaxPartition      *string `json:"max_partition,omitempty"`
	// What this connector's commits reported (Source "commits").
	SnapshotID       *int64    `json:"snapshot_id,omitempty"`
	Commits          *int64    `json:"commits,omitempty"`
	CommittedRecords *int64    `json:"committed_records,omitempty"`
	CommittedFiles   *int64    `json:"committed_files,omitempty"`
	LastCommit       time.Time `json:"last_commit,omitzero"`
}

// Sources of [TableHealth] numbers.
const (
	TablesFromMaintenance = "maintenance"
	TablesFromCommits     = "commits"
)

// MaintenanceRun is one maintenance task run.
type MaintenanceRun struct {
	Table       string        `json:"table"`
	Task        string        `json:"task"`
	Trigger     string        `json:"trigger"`
	Started     time.Time     `json:"started"`
	Duration    time.Duration `json:"duration_ns"`
	FilesBefore int64         `json:"files_before"`
	FilesAfter  int64         `json:"files_after"`
	BytesBefore int64         `json:"bytes_before"`
	BytesAfter  int64         `json:"bytes_after"`
	Error       string        `json:"error,omitempty"`
	Detail      string        `json:"detail,omitempty"`
}
