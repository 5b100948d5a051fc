package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk/internal/pb"
)

// partitionerServer adapts the process's Partitioner components to the
// Partitioner service.
type partitionerServer struct {
	pb.UnimplementedPartitionerServer
	s *server
}

type partitionerEntry struct {
	task  PartitionerTask
	label string
	// projected: the task declared its columns, so the host sends only
	// those, and a batch of rows without any of them has no records.
	projected bool
	// calls keeps Close after the calls in flight.
	calls calls
}

func (e *partitionerEntry) inflight() *calls { return &e.calls }

// close closes the task once its calls in flight have returned.
func (e *partitionerEntry) close(ctx context.Context, log *slog.Logger) error {
	return e.calls.close(ctx, e.label, log, func(ctx context.Context) error {
		return safeClose(ctx, e.label, e.task.Close)
	})
}

func (ps *partitionerServer) Open(ctx context.Context, req *pb.PartitionerOpenRequest) (*pb.PartitionerOpenResponse, error) {
	c, err := ps.s.component(KindPartitioner, req.GetComponent())
	if err != nil {
		return nil, err
	}
	cfg, err := ps.s.config(c, req.GetConfig())
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("partitioner %q of connector %q", c.Name, req.GetConnector())
	task, err := c.Partitioner.Open(ctx, PartitionerOpenRequest{
		Connector: req.GetConnector(),
		Config:    cfg,
		Writers:   int(req.GetWriters()),
		Logger:    ps.s.log.With("connector", req.GetConnector(), "component", c.Name),
	})
	if err != nil {
		return nil, err
	}
	if task == nil {
		return nil, errors.New("Open returned neither a task nor an error")
	}
	if err := c.matchCapabilities(task); err != nil {
		_ = safeClose(ctx, label, task.Close)
		return nil, err
	}
	resp := &pb.PartitionerOpenResponse{}
	e := &partitionerEntry{task: task, label: label}
	if pc, ok := task.(PartitionerWithColumns); ok {
		names := pc.Columns()
		for _, n := range names {
			if n == "" {
				_ = safeClose(ctx, label, task.Close)
				return nil, fmt.Errorf("%s: Columns names an empty column", label)
			}
		}
		resp.Columns = &pb.Columns{Names: names}
		e.projected = true
	}
	resp.Handle = ps.s.partitioners.add(e)
	return resp, nil
}

func (ps *partitionerServer) Partition(ctx context.Context, req *pb.PartitionRequest) (*pb.PartitionResponse, error) {
	e, ctx, end, err := enter(ctx, &ps.s.partitioners, KindPartitioner, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	b, err := batchFromProto(req.GetBatch(), ps.s.mem)
	if err != nil {
		return nil, err
	}
	if b.Records == nil && e.projected && req.GetBatch().GetNumRecords() > 0 {
		// None of the declared columns is in the batch: its rows still
		// need a writer each.
		b.Records = rowsOnly(req.GetBatch().GetNumRecords())
	}
	if b.Records == nil {
		return &pb.PartitionResponse{}, nil
	}
	defer b.Records.Release()
	writers, err := e.task.Partition(ctx, b)
	if err != nil {
		return nil, err
	}
	resp := &pb.PartitionResponse{Writers: writers}
	if l, ok := e.task.(PartitionerWithLoad); ok {
		resp.Load = l.Load()
	}
	return resp, nil
}

func (ps *partitionerServer) Close(ctx context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	e, err := ps.s.partitioners.remove(KindPartitioner, req.GetHandle())
	if err != nil {
		return nil, err
	}
	if err := e.close(ctx, ps.s.log); err != nil {
		return nil, err
	}
	return &pb.CloseResponse{}, nil
}

// rowsOnly is a record batch of n rows and no columns.
func rowsOnly(n int64) arrow.RecordBatch {
	return array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, n)
}
