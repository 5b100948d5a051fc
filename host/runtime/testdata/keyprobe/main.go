// Command keyprobe is a floe plugin for the tests of what config each
// plugin receives: a source, partitioner, sink and maintenance component
// that do nothing but record the keys they were given. Each writes the
// sorted keys of its config to <floe.data.dir>/keys/<kind>.json when it
// opens, and to <floe.data.dir>/keys/validate-<kind>.json when its spec's
// check runs (config/validate, and the SDK's check before Open).
package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(
		sdk.Component{
			Name: "probe-source", Version: "0.0.1",
			Spec: spec(sdk.KindSource,
				sdk.String("kafka.bootstrap.servers"),
				sdk.Password("kafka.sasl.password"),
				sdk.Prefix("kafka."),
			),
			Source: source{},
		},
		sdk.Component{
			Name: "probe-partitioner", Version: "0.0.1",
			Spec:        spec(sdk.KindPartitioner, sdk.List("probe.fields")),
			Partitioner: partitioner{},
		},
		sdk.Component{
			Name: "probe-sink", Version: "0.0.1",
			Spec: spec(sdk.KindSink,
				sdk.List("iceberg.tables"),
				sdk.Password("iceberg.catalog.jdbc.password"),
				sdk.Prefix("iceberg.catalog."),
			),
			Sink: sink{},
		},
		sdk.Component{
			Name: "probe-maintenance", Version: "0.0.1",
			// commit.interval.ms is the host's, named exactly: it arrives.
			// errors.* is the host's too, reached by a prefix: it does not.
			Spec: spec(sdk.KindMaintenance,
				sdk.Duration("commit.interval.ms"),
				sdk.Prefix("errors."),
			),
			Maintenance: maintenance{},
		},
	)
}

// spec declares fields (no defaults, so only given keys show) and a check
// that records the keys validation saw.
func spec(k sdk.Kind, fields ...*sdk.Field) sdk.Spec {
	return sdk.NewSpec(fields...).WithCheck(func(cfg sdk.Config) error {
		return record("validate-"+string(k), cfg)
	})
}

// record writes the sorted keys of cfg to <floe.data.dir>/keys/<name>.json.
func record(name string, cfg sdk.Config) error {
	dir := filepath.Join(cfg.String("floe.data.dir"), "keys")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(slices.Sorted(maps.Keys(cfg.Map())))
	if err != nil {
		return err
	}
	// Written whole, then renamed: the test polls for the file.
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".json"))
}

type source struct{}

func (source) Open(_ context.Context, req sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return &sourceTask{host: req.Host}, record(string(sdk.KindSource), req.Config)
}

// sourceTask reads one record, so the host opens the partitioner (it
// does so at the first batch), then nothing.
type sourceTask struct {
	host sdk.SourceHost
	sent bool
}

var valueSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

func (t *sourceTask) Read(ctx context.Context, _ int) ([]sdk.Batch, error) {
	if t.sent {
		<-ctx.Done()
		return nil, nil
	}
	if err := t.host.AdmitSchema(ctx, sdk.Schema{ID: 1, Arrow: valueSchema}); err != nil {
		return nil, err
	}
	pos, err := t.host.StartPositions(ctx, []string{"p0"})
	if err != nil {
		return nil, err
	}
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	from := pos["p0"]
	b.Field(0).(*array.Int64Builder).Append(from)
	b.Field(1).(*array.Int64Builder).Append(from)
	b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Now().UnixMilli()))
	b.Field(3).(*array.BinaryBuilder).AppendNull()
	t.sent = true
	return []sdk.Batch{{Partition: "p0", From: from, Next: from + 1, SchemaID: 1, Records: b.NewRecordBatch()}}, nil
}
func (*sourceTask) Commit(context.Context, map[string]int64) error { return nil }
func (*sourceTask) Close(context.Context) error                    { return nil }

type partitioner struct{}

func (partitioner) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	return partitionerTask{}, record(string(sdk.KindPartitioner), req.Config)
}

type partitionerTask struct{}

func (partitionerTask) Partition(_ context.Context, b sdk.Batch) ([]uint32, error) {
	return make([]uint32, b.Records.NumRows()), nil
}
func (partitionerTask) Close(context.Context) error { return nil }

type sink struct{}

func (sink) Open(_ context.Context, req sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	return sinkTask{}, record(string(sdk.KindSink), req.Config)
}

type sinkTask struct{}

func (sinkTask) Write(context.Context, sdk.WriteRequest) ([]sdk.Rejected, error) { return nil, nil }
func (sinkTask) Flush(context.Context, uint64) ([]sdk.WriteResult, error)        { return nil, nil }
func (sinkTask) Commit(context.Context, sdk.CommitRequest) ([]sdk.TableCommit, error) {
	return nil, nil
}
func (sinkTask) Close(context.Context) error { return nil }

type maintenance struct{}

func (maintenance) Open(_ context.Context, req sdk.MaintenanceOpenRequest) (sdk.MaintenanceTask, error) {
	return maintenanceTask{}, record(string(sdk.KindMaintenance), req.Config)
}

type maintenanceTask struct{}

func (maintenanceTask) Cycle(context.Context, sdk.CycleRequest) (sdk.CycleResult, error) {
	return sdk.CycleResult{Next: time.Hour}, nil
}
func (maintenanceTask) Status(context.Context) (sdk.MaintenanceStatus, error) {
	return sdk.MaintenanceStatus{}, nil
}
func (maintenanceTask) Close(context.Context) error { return nil }
