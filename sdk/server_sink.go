package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk/internal/pb"
	"github.com/floehq/floe/sdk/internal/shm"
)

// sinkServer adapts the process's Sink components to the Sink service.
type sinkServer struct {
	pb.UnimplementedSinkServer
	s *server
}

type sinkEntry struct {
	task    SinkTask
	label   string
	writers int
	// calls keeps Close after the calls in flight.
	calls calls
}

func (e *sinkEntry) inflight() *calls { return &e.calls }

// close closes the task once its calls in flight have returned.
func (e *sinkEntry) close(ctx context.Context, log *slog.Logger) error {
	return e.calls.close(ctx, e.label, log, func(ctx context.Context) error {
		return safeClose(ctx, e.label, e.task.Close)
	})
}

func (ss *sinkServer) Open(ctx context.Context, req *pb.SinkOpenRequest) (*pb.SinkOpenResponse, error) {
	c, err := ss.s.component(KindSink, req.GetComponent())
	if err != nil {
		return nil, err
	}
	cfg, err := ss.s.config(c, req.GetConfig())
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("sink %q of connector %q", c.Name, req.GetConnector())
	task, err := c.Sink.Open(ctx, SinkOpenRequest{
		Connector:    req.GetConnector(),
		Config:       cfg,
		Writers:      int(req.GetWriters()),
		OffsetsReset: offsetsResetFromProto(req.GetOffsetsReset()),
		Logger:       ss.s.log.With("connector", req.GetConnector(), "component", c.Name),
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
	return &pb.SinkOpenResponse{
		Handle:       ss.s.sinks.add(&sinkEntry{task: task, label: label, writers: int(req.GetWriters())}),
		SharedMemory: shm.Supported(),
	}, nil
}

func (ss *sinkServer) Frontier(ctx context.Context, req *pb.FrontierRequest) (*pb.FrontierResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sinks, KindSink, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	ft, ok := e.task.(SinkTaskWithFrontier)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "the sink keeps no frontier (it declares no frontier capability; its task does not implement sdk.SinkTaskWithFrontier)")
	}
	f, err := ft.Frontier(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.FrontierResponse{Positions: f.Positions, Checkpoint: f.Checkpoint}, nil
}

// PrepareSchema answers a rejection in band (accepted=false with the
// reason); other errors fail the call.
func (ss *sinkServer) PrepareSchema(ctx context.Context, req *pb.PrepareSchemaRequest) (*pb.PrepareSchemaResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sinks, KindSink, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	st, ok := e.task.(SinkTaskWithSchemas)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "the sink does not prepare schemas (it declares no schemas capability; its task does not implement sdk.SinkTaskWithSchemas)")
	}
	s, err := schemaFromProto(req.GetSchema())
	if err != nil {
		return nil, err
	}
	changes, err := st.PrepareSchema(ctx, s)
	switch {
	case errors.Is(err, ErrSchemaRejected):
		return &pb.PrepareSchemaResponse{
			Accepted: false,
			Reason:   RejectionReason(err),
		}, nil
	case err != nil:
		return nil, err
	}
	return &pb.PrepareSchemaResponse{Accepted: true, Changes: changes}, nil
}

func (ss *sinkServer) Write(ctx context.Context, req *pb.WriteRequest) (*pb.WriteResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sinks, KindSink, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	b, err := batchFromProto(req.GetBatch(), ss.s.mem)
	if err != nil {
		return nil, err
	}
	if b.Records == nil {
		return &pb.WriteResponse{}, nil // every record of the range was skipped: nothing to write
	}
	defer b.Records.Release()
	if err := checkWriters(req.GetWriters(), b.Records.NumRows(), e.writers); err != nil {
		return nil, err
	}
	rejected, err := e.task.Write(ctx, WriteRequest{Checkpoint: req.GetCheckpoint(), Batch: b, Writers: req.GetWriters()})
	if err != nil {
		return nil, err
	}
	return &pb.WriteResponse{Rejected: rejectedToProto(rejected)}, nil
}

func (ss *sinkServer) Flush(ctx context.Context, req *pb.FlushRequest) (*pb.FlushResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sinks, KindSink, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	results, err := e.task.Flush(ctx, req.GetCheckpoint())
	if err != nil {
		return nil, err
	}
	resp := &pb.FlushResponse{Results: writeResultsToProto(results)}
	if sk, ok := e.task.(SinkTaskWithSkips); ok {
		resp.Skipped = sk.Skipped(req.GetCheckpoint())
	}
	return resp, nil
}

func (ss *sinkServer) Commit(ctx context.Context, req *pb.SinkCommitRequest) (*pb.SinkCommitResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sinks, KindSink, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	commits, err := e.task.Commit(ctx, CommitRequest{
		Checkpoint: req.GetCheckpoint(),
		Ranges:     rangesFromProto(req.GetRanges()),
		Results:    writeResultsFromProto(req.GetResults()),
	})
	if err != nil {
		return nil, err
	}
	return &pb.SinkCommitResponse{Commits: tableCommitsToProto(commits)}, nil
}

func (ss *sinkServer) Close(ctx context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	e, err := ss.s.sinks.remove(KindSink, req.GetHandle())
	if err != nil {
		return nil, err
	}
	if err := e.close(ctx, ss.s.log); err != nil {
		return nil, err
	}
	return &pb.CloseResponse{}, nil
}

// Waits answers for the component's Sink, which needs no open task: it
// may be waiting inside its Open.
func (ss *sinkServer) Waits(_ context.Context, req *pb.SinkWaitsRequest) (*pb.SinkWaitsResponse, error) {
	c, err := ss.s.component(KindSink, req.GetComponent())
	if err != nil {
		return nil, err
	}
	w, ok := c.Sink.(SinkWithWaits)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "the sink does not say what it waits for (it declares no waits capability; its Sink does not implement sdk.SinkWithWaits)")
	}
	resp := &pb.SinkWaitsResponse{}
	for _, sw := range w.Waits(req.GetConnector()) {
		resp.Waits = append(resp.Waits, &pb.ServiceWait{
			Service: sw.Service, SinceUnixMs: sw.Since.UnixMilli(), Attempts: sw.Attempts, LastError: sw.LastError,
		})
	}
	return resp, nil
}

// checkWriters holds the host to Write's contract, so a sink can index by
// the writer list without checking it.
func checkWriters(writers []uint32, rows int64, n int) error {
	if len(writers) == 0 {
		return nil
	}
	if int64(len(writers)) != rows {
		return status.Errorf(codes.InvalidArgument, "write: %d writer indexes for %d records", len(writers), rows)
	}
	for i, w := range writers {
		if n > 0 && int(w) >= n {
			return status.Errorf(codes.InvalidArgument, "write: record %d goes to writer %d, but the sink was opened with %d writers", i, w, n)
		}
	}
	return nil
}
