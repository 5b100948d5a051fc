package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Plugins starts plugin binaries. The worker adapts host/registry to it;
// unit tests pass in-process fakes.
type Plugins interface {
	// Start starts the binary that serves component name of kind. ctx
	// bounds the start only. Errors name the plugin.
	Start(ctx context.Context, kind sdk.Kind, name string, opts client.StartOptions) (Process, error)
}

// Process is what the runtime needs of a running plugin binary
// (*client.Process through [WrapProcess]).
type Process interface {
	OpenSource(ctx context.Context, req client.SourceOpen) (SourceTask, error)
	OpenPartitioner(ctx context.Context, req client.PartitionerOpen) (PartitionerTask, error)
	OpenSink(ctx context.Context, req client.SinkOpen) (SinkTask, error)
	OpenMaintenance(ctx context.Context, req client.MaintenanceOpen) (MaintenanceTask, error)
	// Validate checks config against one component's spec in the plugin,
	// so the plugin's own validators run.
	Validate(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error)
	// Exited is closed when the process ends.
	Exited() <-chan struct{}
	// ExitReason says why, once Exited is closed.
	ExitReason() string
	Kill()
}

// ProcessWithProbes is a [Process] that can also run a component's probes
// (sdk.Spec.WithProbe) after its validation, for config/validate only.
// *client.Process through [WrapProcess] is one.
type ProcessWithProbes interface {
	Process
	ValidateAndProbe(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error)
}

// SourceTask is what the runtime needs of *client.SourceTask. Read, Commit
// and Close are called from one goroutine per task.
type SourceTask interface {
	Read(ctx context.Context, max int) (client.ReadResult, error)
	Commit(ctx context.Context, positions map[string]int64) error
	Close(ctx context.Context) error
}

// PartitionerTask is what the runtime needs of *client.PartitionerTask.
// Partition is called from every source task's pipeline at once.
type PartitionerTask interface {
	Partition(ctx context.Context, b client.Batch) (writers []uint32, load []float64, err error)
	Close(ctx context.Context) error
}

// SinkTask is what the runtime needs of *client.SinkTask; the runtime keeps
// sdk.SinkTask's ordering contract.
type SinkTask interface {
	Frontier(ctx context.Context) (sdk.Frontier, error)
	PrepareSchema(ctx context.Context, s client.Schema) ([]string, error)
	Write(ctx context.Context, checkpoint uint64, b client.Batch, writers []uint32) ([]sdk.Rejected, error)
	Flush(ctx context.Context, checkpoint uint64) (client.Flushed, error)
	Commit(ctx context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error)
	Close(ctx context.Context) error
}

// MaintenanceTask is what the runtime needs of *client.MaintenanceTask.
type MaintenanceTask interface {
	Cycle(ctx context.Context, req sdk.CycleRequest) (sdk.CycleResult, error)
	Status(ctx context.Context) (sdk.MaintenanceStatus, error)
	Close(ctx context.Context) error
}

// WrapProcess adapts a *client.Process to [Process].
func WrapProcess(p *client.Process) Process { return clientProcess{p} }

type clientProcess struct{ p *client.Process }

func (c clientProcess) OpenSource(ctx context.Context, req client.SourceOpen) (SourceTask, error) {
	t, err := c.p.OpenSource(ctx, req)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (c clientProcess) OpenPartitioner(ctx context.Context, req client.PartitionerOpen) (PartitionerTask, error) {
	t, err := c.p.OpenPartitioner(ctx, req)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (c clientProcess) OpenSink(ctx context.Context, req client.SinkOpen) (SinkTask, error) {
	t, err := c.p.OpenSink(ctx, req)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (c clientProcess) OpenMaintenance(ctx context.Context, req client.MaintenanceOpen) (MaintenanceTask, error) {
	t, err := c.p.OpenMaintenance(ctx, req)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (c clientProcess) Validate(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error) {
	return c.p.Validate(ctx, kind, component, config)
}

func (c clientProcess) ValidateAndProbe(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error) {
	return c.p.ValidateAndProbe(ctx, kind, component, config)
}

func (c clientProcess) Exited() <-chan struct{} { return c.p.Exited() }
func (c clientProcess) ExitReason() string      { return c.p.ExitReason() }
func (c clientProcess) Kill()                   { c.p.Kill() }

// exitWait is how long a failed call waits for its process to be seen
// gone before the error is taken for a plugin error rather than a crash.
const exitWait = 500 * time.Millisecond

// processGone reports whether err came from p having ended.
func processGone(p Process, err error) bool {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Exited {
		return true
	}
	if p == nil {
		return false
	}
	if ce != nil {
		// The client waited for the process already when the connection
		// broke; any other client error is the plugin's own answer.
		select {
		case <-p.Exited():
			return true
		default:
			return false
		}
	}
	select {
	case <-p.Exited():
		return true
	case <-time.After(exitWait):
		return false
	}
}
