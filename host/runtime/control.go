package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floehq/floe/sdk"
)

// ControlLink carries one connector's control messages between the
// workers of a cluster that run its tasks and its one committer:
// flushed checkpoints go to the committer, its commit answers go back to
// every worker. A Kafka topic carries them in distributed mode
// (host/control).
//
// Delivery is at least once and in publish order per publisher; a
// message may be received more than once, and a link receives only what
// was published after it opened. The runtime copes with both: workers
// publish a checkpoint again until it is answered, and the committer
// answers a repeat as it answered the first.
type ControlLink interface {
	// Publish sends m to the connector's committer and workers. ctx
	// bounds it.
	Publish(ctx context.Context, m ControlMessage) error
	// Receive returns the next message of the connector, waiting until
	// one comes or ctx ends.
	Receive(ctx context.Context) (ControlMessage, error)
	// Sync returns once every message published before the call (by any
	// worker) has been received, or ctx ends.
	Sync(ctx context.Context) error
	// Close ends the link; Receive returns an error after it.
	Close()
}

// ControlMessage is one message of a [ControlLink]: exactly one of its
// fields is set.
type ControlMessage struct {
	// Flushed is a worker's flushed checkpoint, for the committer.
	Flushed *FlushedCheckpoint `json:"flushed,omitempty"`
	// Answer is the committer's answer about flushed checkpoints.
	Answer *CommitAnswer `json:"answer,omitempty"`
}

// CheckpointRef names one flushed checkpoint in a cluster: a worker's
// session (one open sink; a new one after the sink process restarts)
// numbers its checkpoints, so the three together are unique.
type CheckpointRef struct {
	Worker     string `json:"worker"`
	Session    string `json:"session"`
	Checkpoint uint64 `json:"checkpoint"`
}

func (r CheckpointRef) String() string {
	return fmt.Sprintf("%s/%s/%d", r.Worker, r.Session, r.Checkpoint)
}

func compareRefs(a, b CheckpointRef) int {
	return cmp.Or(strings.Compare(a.Worker, b.Worker), strings.Compare(a.Session, b.Session), cmp.Compare(a.Checkpoint, b.Checkpoint))
}

// FlushedCheckpoint is phase 1 of a checkpoint done on one worker: its
// files are written and described; the committer registers them.
type FlushedCheckpoint struct {
	Ref    CheckpointRef `json:"ref"`
	Ranges []sdk.Range   `json:"ranges"`
	// Origins lists the partitions whose range starts where the source
	// began on its own (Checkpoint.Origins): only such a range may bring
	// a partition the frontier does not hold yet.
	Origins []string          `json:"origins,omitempty"`
	Results []sdk.WriteResult `json:"results"`
	Records int64             `json:"records"`
	// Oldest is when the checkpoint's oldest batch was received (for the
	// commit lag).
	Oldest time.Time `json:"oldest,omitzero"`
}

// CommitAnswer is the committer's word on flushed checkpoints: those it
// committed (with the commit's id and the connector's whole frontier
// after it) and those it refused.
type CommitAnswer struct {
	// Committer names the committer's worker and its assignment epoch.
	Committer string `json:"committer"`
	Epoch     int64  `json:"epoch"`
	// Commit is the id of the commit that holds Covered (0 when the
	// answer only refuses).
	Commit uint64 `json:"commit,omitempty"`
	// Frontier is the connector's frontier after Commit: per source
	// partition, the position after the last committed record.
	Frontier map[string]int64 `json:"frontier,omitempty"`
	Covered  []CheckpointRef  `json:"covered,omitempty"`
	Refused  []Refusal        `json:"refused,omitempty"`
	// Ready is a committer's first word, once it read the table: every
	// worker publishes its unanswered checkpoints again at once. Those
	// published when the committer moved may have come before it listened
	// (a link receives only what was published after it opened).
	Ready bool `json:"ready,omitempty"`
}

// Refusal is a flushed checkpoint the committer will never commit: its
// ranges start below the connector's frontier (what they cover was
// committed from another worker's files, or the worker read from a stale
// position), or above it for longer than Tuning.GapWait (Gap). Its
// worker drops its uncommitted work and resumes from the frontier.
type Refusal struct {
	Ref    CheckpointRef `json:"ref"`
	Reason string        `json:"reason"`
	// Gap marks a checkpoint that started above the table's frontier:
	// its worker started from a frontier the table does not hold, and
	// must start from the table's.
	Gap bool `json:"gap,omitempty"`
}

// errSuperseded marks a session of a cluster worker whose flushed
// checkpoint the committer refused: everything uncommitted is dropped
// and a new session resumes from the frontier.
var errSuperseded = errors.New("checkpoint superseded")
