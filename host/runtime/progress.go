package runtime

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floehq/floe/sdk"
)

// Progress is floe's view of a running connector, for its status.
type Progress struct {
	RecordsIn   int64
	RecordsOut  int64
	DeadLetters int64
	// Skipped counts records the sink dropped on purpose, neither
	// written nor dead-lettered (sdk.SinkTaskWithSkips).
	Skipped            int64
	Checkpoint         uint64 // last committed checkpoint id
	CommittedAt        time.Time
	Commits            int64
	FilesWritten       int64
	PendingCheckpoints int
	WriterLoad         []float64
	PluginRestarts     int64
	EndOfInput         bool
	// Waits lists the services the sink is waiting for (an unavailable
	// catalog or object store), as it says (sdk.SinkWithWaits); empty
	// while everything answers.
	Waits []sdk.ServiceWait
	// Maintenance is nil when the connector has no maintenance plugin.
	Maintenance *MaintenanceProgress
}

// MaintenanceProgress is what the connector's maintenance plugin did
// since the connector started.
type MaintenanceProgress struct {
	Runs, FailedRuns int64
	// LastRuns holds the latest run of each task on each table.
	LastRuns []sdk.TaskRun
	// Error says why the plugin is not running ("" while it is, or
	// while it starts).
	Error string
}

// progress holds the counters behind [Progress]; safe for concurrent use.
type progress struct {
	recordsIn      atomic.Int64
	recordsOut     atomic.Int64
	deadLetters    atomic.Int64
	skipped        atomic.Int64
	commits        atomic.Int64
	files          atomic.Int64
	pending        atomic.Int64
	pluginRestarts atomic.Int64
	endOfInput     atomic.Bool

	mu          sync.Mutex
	checkpoint  uint64
	committedAt time.Time
	writerLoad  []float64
	waits       []sdk.ServiceWait
}

func (p *progress) committed(id uint64, at time.Time, records int64) {
	p.commits.Add(1)
	p.recordsOut.Add(records)
	p.mu.Lock()
	p.checkpoint, p.committedAt = id, at
	p.mu.Unlock()
}

func (p *progress) setLoad(load []float64) {
	if len(load) == 0 {
		return
	}
	p.mu.Lock()
	p.writerLoad = slices.Clone(load)
	p.mu.Unlock()
}

func (p *progress) setWaits(waits []sdk.ServiceWait) {
	p.mu.Lock()
	p.waits = slices.Clone(waits)
	p.mu.Unlock()
}

func (p *progress) snapshot() Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Progress{
		RecordsIn:          p.recordsIn.Load(),
		RecordsOut:         p.recordsOut.Load(),
		DeadLetters:        p.deadLetters.Load(),
		Skipped:            p.skipped.Load(),
		Checkpoint:         p.checkpoint,
		CommittedAt:        p.committedAt,
		Commits:            p.commits.Load(),
		FilesWritten:       p.files.Load(),
		PendingCheckpoints: int(p.pending.Load()),
		WriterLoad:         slices.Clone(p.writerLoad),
		PluginRestarts:     p.pluginRestarts.Load(),
		EndOfInput:         p.endOfInput.Load(),
		Waits:              slices.Clone(p.waits),
	}
}
