// Command clitest is a floe plugin for the CLI's tests: a maintenance
// component whose cycles report canned runs, and a source, sink and
// partitioner that only declare config specs (for `floe plugins` and
// `floe validate`).
package main

import (
	"context"
	"errors"
	"time"

	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(
		sdk.Component{
			Name:    "test-maintenance",
			Version: "1.2.3",
			Summary: "reports canned maintenance runs",
			Spec: sdk.NewSpec(
				sdk.String("test.fail").Default("").OneOf("", "cycle", "run").
					Describe("cycle: every cycle fails; run: every cycle reports a failed run"),
				sdk.Duration("test.next").Default("100").Describe("delay the plugin asks before the next cycle"),
			),
			Maintenance: maintenance{},
		},
		sdk.Component{
			Name:    "test-source",
			Aliases: []string{"org.example.TestSource"},
			Version: "0.0.1",
			Summary: "declares keys, reads nothing",
			Spec: sdk.NewSpec(
				sdk.String("test.topic").Require().Describe("topic to read").InGroup("Source"),
				sdk.Int("test.batch").Default("500").Min(1).Describe("records per batch"),
				sdk.Password("test.secret").Describe("a secret"),
				sdk.Prefix("test.client.").Describe("client settings"),
			),
			Source: source{},
		},
		sdk.Component{
			Name:    "test-sink",
			Version: "0.0.1",
			Summary: "declares keys, writes nothing",
			Spec: sdk.NewSpec(
				sdk.String("test.table").Require().Describe("table to write"),
				sdk.Password("test.sink.password").Describe("catalog password"),
			),
			Sink: sink{},
		},
		sdk.Component{
			Name:        "test-partitioner",
			Version:     "0.0.1",
			Spec:        sdk.NewSpec(),
			Partitioner: partitioner{},
		},
	)
}

type maintenance struct{}

func (maintenance) Open(_ context.Context, req sdk.MaintenanceOpenRequest) (sdk.MaintenanceTask, error) {
	return &task{cfg: req.Config, connector: req.Connector}, nil
}

type task struct {
	cfg       sdk.Config
	connector string
	cycles    int
}

func (t *task) Cycle(ctx context.Context, req sdk.CycleRequest) (sdk.CycleResult, error) {
	t.cycles++
	if t.cfg.String("test.fail") == "cycle" {
		return sdk.CycleResult{}, errors.New("catalog unreachable: dial tcp 127.0.0.1:1: connection refused")
	}
	trigger := "data-file-count 120 >= 50"
	if len(req.Force) > 0 {
		trigger = "forced"
	}
	detail := "data dir " + t.cfg.String("floe.data.dir") + " connector " + t.connector
	if req.DryRun {
		detail = "dry run; " + detail
	}
	run := sdk.TaskRun{Table: "demo.orders", Task: "rewrite-data-files", Trigger: trigger,
		Started: time.Now(), Duration: 1500 * time.Millisecond,
		FilesBefore: 120, FilesAfter: 1, BytesBefore: 120 << 20, BytesAfter: 118 << 20, Detail: detail}
	if t.cfg.String("test.fail") == "run" {
		run.Error = "commit conflict: branch main has changed"
		run.FilesAfter = run.FilesBefore
	}
	next, err := t.cfg.Duration("test.next")
	if err != nil {
		return sdk.CycleResult{}, err
	}
	return sdk.CycleResult{Runs: []sdk.TaskRun{run}, Next: next}, nil
}

func (t *task) Status(context.Context) (sdk.MaintenanceStatus, error) {
	return sdk.MaintenanceStatus{}, nil
}

func (t *task) Close(context.Context) error { return nil }

type source struct{}

func (source) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return nil, errors.New("test-source reads nothing")
}

type sink struct{}

func (sink) Open(context.Context, sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	return nil, errors.New("test-sink writes nothing")
}

type partitioner struct{}

func (partitioner) Open(context.Context, sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	return nil, errors.New("test-partitioner partitions nothing")
}
