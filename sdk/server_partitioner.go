package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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
	return &pb.PartitionerOpenResponse{Handle: ps.s.partitioners.add(&partitionerEntry{task: task, label: label})}, nil
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
