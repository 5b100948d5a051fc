package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by getters for a connector the store holds
// nothing about. Callers that treat "nothing yet" as normal test for it
// with errors.Is.
var ErrNotFound = errors.New("store: not found")

// TargetState is the state a user asked a connector to be in. It survives
// restarts: a worker brings each stored connector back in its target state.
type TargetState string

// Target states, with Kafka Connect's names.
const (
	TargetRunning TargetState = "RUNNING"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

// Connector is a connector's stored config and target state.
type Connector struct {
	Name    string            `json:"name"`
	Config  map[string]string `json:"config"`
	Target  TargetState       `json:"target_state"`
	Created time.Time         `json:"created"`
	Updated time.Time         `json:"updated"`
}

// ConfigStore keeps connector configs and target states. Methods are safe
// for concurrent use; ctx bounds the I/O.
type ConfigStore interface {
	// PutConnector creates or replaces the connector's record.
	PutConnector(ctx context.Context, c Connector) error
	// Connector returns one record, or an error wrapping ErrNotFound.
	Connector(ctx context.Context, name string) (Connector, error)
	// Connectors returns every record, sorted by name.
	Connectors(ctx context.Context) ([]Connector, error)
	// DeleteConnector removes the record; deleting a missing one is not
	// an error.
	DeleteConnector(ctx context.Context, name string) error
}

// InstanceStatus is the last known state of a connector or one of its tasks.
type InstanceStatus struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// Status is a connector's last reported status.
type Status struct {
	Connector InstanceStatus   `json:"connector"`
	Tasks     []InstanceStatus `json:"tasks"`
	Updated   time.Time        `json:"updated"`
}

// StatusStore keeps statuses and the topics each connector used (Kafka
// Connect keeps both in its status topic). Methods are safe for concurrent
// use; ctx bounds the I/O.
type StatusStore interface {
	PutStatus(ctx context.Context, name string, s Status) error
	// Status returns the last status, or an error wrapping ErrNotFound.
	Status(ctx context.Context, name string) (Status, error)
	// PutTopics replaces the set of topics the connector used.
	PutTopics(ctx context.Context, name string, topics []string) error
	// Topics returns the topics the connector used, sorted; none is not
	// an error.
	Topics(ctx context.Context, name string) ([]string, error)
	// DeleteStatus forgets the status and the topics.
	DeleteStatus(ctx context.Context, name string) error
}

// PartStatusStore is a StatusStore that several workers of a cluster
// write for one connector (distributed mode): each writes the tasks it
// runs, and the worker of the connector's committer writes the
// connector's own status.
type PartStatusStore interface {
	// PutPartStatus writes the given tasks' statuses (by task id) and,
	// when connector is not nil, the connector's; other tasks' records
	// stay as their workers wrote them.
	PutPartStatus(ctx context.Context, name string, connector *InstanceStatus, tasks map[int]InstanceStatus) error
}

// Committed is what the last successful commit of a connector covered.
type Committed struct {
	// Checkpoint is the id of the last committed checkpoint.
	Checkpoint uint64 `json:"checkpoint"`
	// Positions holds, per source partition, the position after the last
	// committed record (cumulative over all commits).
	Positions   map[string]int64 `json:"positions"`
	CommittedAt time.Time        `json:"committed_at"`
}

// Override is a start frontier set by the user (PATCH or DELETE
// /connectors/{c}/offsets) that no commit has carried yet. The runtime
// resumes from it instead of the sink's frontier, and the first commit
// after it tells the sink to replace its frontier (see runtime's doc).
type Override struct {
	// Positions is the complete new start frontier: a partition absent
	// from it starts where the source decides (earliest or latest).
	Positions map[string]int64 `json:"positions"`
	// AfterCheckpoint is the sink's last committed checkpoint when the
	// override was made. A sink frontier past it means a commit carried
	// the override already, so it is spent.
	AfterCheckpoint uint64 `json:"after_checkpoint"`
	// Reset is true for DELETE offsets (start over), false for PATCH.
	Reset   bool      `json:"reset"`
	Created time.Time `json:"created"`
}

// OffsetStore keeps committed offsets and overrides. Methods are safe for
// concurrent use; ctx bounds the I/O.
type OffsetStore interface {
	// PutCommitted records a successful commit. The runtime calls it after
	// each commit, in checkpoint order.
	PutCommitted(ctx context.Context, name string, c Committed) error
	// Committed returns the last commit, or an error wrapping ErrNotFound.
	Committed(ctx context.Context, name string) (Committed, error)
	PutOverride(ctx context.Context, name string, o Override) error
	// Override returns the pending override, or an error wrapping
	// ErrNotFound.
	Override(ctx context.Context, name string) (Override, error)
	DeleteOverride(ctx context.Context, name string) error
	// DeleteOffsets forgets committed offsets and any override.
	DeleteOffsets(ctx context.Context, name string) error
}
