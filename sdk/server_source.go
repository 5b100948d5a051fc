package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk/internal/arrowipc"
	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/pb"
	"github.com/floehq/floe/sdk/internal/shm"
)

// sourceServer adapts the process's Source components to the Source
// service.
type sourceServer struct {
	pb.UnimplementedSourceServer
	s      *server
	broker *plugin.GRPCBroker
}

// sourceEntry is one open source task.
type sourceEntry struct {
	task  SourceTask
	conn  *grpc.ClientConn // to the host's SourceHost for this task
	label string
	// calls serialises Read and Commit and keeps Close after them. The
	// fields below belong to the call in flight.
	calls calls

	// pending holds encoded batches the task returned that did not fit in
	// a response (message limit, max_batches) or whose response could not
	// be sent because the host's call ended; the next Read sends them first.
	pending []*pb.Batch
	// sent holds the batches of response seq until the host acknowledges
	// it in a later Read; if it does not, they go out again.
	sent []*pb.Batch
	seq  uint64
	// eoi is set once the task returned ErrEndOfInput.
	eoi bool
	// shared: the host accepts batches in sealed memory files; files
	// holds the file of each such batch until the host acknowledges the
	// response that carried it (it opens its own descriptor on receipt).
	shared bool
	files  map[*pb.Batch]*shm.File
	// encoder holds the memory each batch is encoded into while sharing:
	// share copies the encoding into the batch's file at once, and a
	// task's Reads are serial (enter), so one encoder serves them all.
	encoder arrowipc.Encoder
}

func (e *sourceEntry) inflight() *calls { return &e.calls }

// close closes the task once its calls in flight have returned, then the
// connection to the host's SourceHost, which the task may use until then.
func (e *sourceEntry) close(ctx context.Context, log *slog.Logger) error {
	return e.calls.close(ctx, e.label, log, func(ctx context.Context) error {
		err := safeClose(ctx, e.label, e.task.Close)
		if e.conn != nil {
			_ = e.conn.Close()
		}
		for b, f := range e.files {
			_ = f.Close()
			delete(e.files, b)
		}
		return err
	})
}

// share moves the records of the batches into sealed memory files, so that
// only handles travel. When a file cannot be made, the rest keep their
// records: sharing saves copies, it is never needed.
func (e *sourceEntry) share(batches []*pb.Batch, log *slog.Logger) {
	for _, b := range batches {
		if len(b.Records) == 0 {
			continue
		}
		f, err := shm.Create("floe-batch", b.Records)
		if err != nil {
			// Out of memory files or locked down: the task sends bytes
			// from now on.
			log.Warn("sending batches as bytes: a shared memory file failed", "error", err)
			e.shared = false
			return
		}
		b.Shared = &pb.SharedRecords{Pid: int32(os.Getpid()), Fd: int32(f.Fd()), Size: f.Size()}
		b.Records = nil
		e.files[b] = f
	}
}

// release closes the files of batches the host acknowledged.
func (e *sourceEntry) release(batches []*pb.Batch) {
	for _, b := range batches {
		if f, ok := e.files[b]; ok {
			_ = f.Close()
			delete(e.files, b)
		}
	}
}

func (ss *sourceServer) Open(ctx context.Context, req *pb.SourceOpenRequest) (*pb.SourceOpenResponse, error) {
	c, err := ss.s.component(KindSource, req.GetComponent())
	if err != nil {
		return nil, err
	}
	cfg, err := ss.s.config(c, req.GetConfig())
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("source %q task %d of connector %q", c.Name, req.GetTask(), req.GetConnector())
	if ss.broker == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "no go-plugin broker to reach the host's SourceHost")
	}
	conn, err := ss.broker.DialWithOptions(req.GetHostBrokerId(), grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(handshake.MaxMessageSize),
		grpc.MaxCallSendMsgSize(handshake.MaxMessageSize),
	))
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "connect to the host's SourceHost (broker id %d): %v",
			req.GetHostBrokerId(), err)
	}
	log := ss.s.log.With("connector", req.GetConnector(), "task", req.GetTask(), "component", c.Name)
	task, err := c.Source.Open(ctx, SourceOpenRequest{
		Connector: req.GetConnector(),
		Task:      int(req.GetTask()),
		Tasks:     int(req.GetTasks()),
		Config:    cfg,
		Host:      &hostClient{c: pb.NewSourceHostClient(conn)},
		Logger:    log,
	})
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	if task == nil {
		_ = conn.Close()
		return nil, errors.New("Open returned neither a task nor an error")
	}
	h := ss.s.sources.add(&sourceEntry{task: task, conn: conn, label: label,
		shared: req.GetSharedMemory() && shm.Supported(), files: map[*pb.Batch]*shm.File{}})
	return &pb.SourceOpenResponse{Handle: h}, nil
}

// Read returns what the task has, at most max_batches batches and one
// message's worth. It gives the task a deadline slightly before the host's,
// so the answer reaches the host before its call times out; batches that
// would still miss it stay pending for the next Read, and a response the
// host did not acknowledge goes out again, so none is lost.
func (ss *sourceServer) Read(ctx context.Context, req *pb.SourceReadRequest) (*pb.SourceReadResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sources, KindSource, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	limit := int(req.GetMaxBatches())
	if limit <= 0 {
		limit = 1
	}
	if len(e.sent) > 0 {
		if req.GetAcked() < e.seq {
			// The host never got the last response: send it again.
			e.pending = slices.Concat(e.sent, e.pending)
		} else {
			e.release(e.sent)
		}
		e.sent = nil
	}
	if len(e.pending) == 0 && !e.eoi {
		tctx, cancel := readContext(ctx)
		batches, err := e.task.Read(tctx, limit)
		cancel()
		switch {
		case errors.Is(err, ErrEndOfInput):
			e.eoi = true
		case err != nil:
			releaseBatches(batches)
			return nil, err
		}
		for i, b := range batches {
			encode := arrowipc.EncodeRecordBatch
			if e.shared {
				encode = e.encoder.Encode
			}
			enc, err := batchToProtoWith(b, ss.s.maxBatchBytes, encode)
			if err != nil {
				releaseBatches(batches[i:])
				return nil, err
			}
			if b.Records != nil {
				b.Records.Release()
			}
			if e.shared {
				e.share(enc, ss.s.log)
				if !e.shared {
					// A file failed: the batches left hold the encoder's
					// memory, which must not be written again.
					e.encoder = arrowipc.Encoder{}
				}
			}
			e.pending = append(e.pending, enc...)
		}
		if err := ctx.Err(); err != nil {
			// The host's call is over: keep the batches for its next Read.
			return nil, status.FromContextError(err).Err()
		}
	}
	resp := &pb.SourceReadResponse{}
	size := 0
	for len(e.pending) > 0 && len(resp.Batches) < limit {
		n := len(e.pending[0].GetRecords()) + 256
		if len(resp.Batches) > 0 && size+n > ss.s.maxResponseBytes {
			break
		}
		size += n
		resp.Batches = append(resp.Batches, e.pending[0])
		e.pending = e.pending[1:]
	}
	resp.EndOfInput = e.eoi && len(e.pending) == 0
	if len(resp.Batches) > 0 {
		e.seq++
		resp.Seq = e.seq
		e.sent = resp.Batches
	}
	return resp, nil
}

// readContext ends a little before ctx's deadline, so the answer can reach
// the host in time: a fifth of the time left, between 5 ms and 1 s.
func readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(max(time.Until(dl)/5, 5*time.Millisecond), time.Second)
	return context.WithDeadline(ctx, dl.Add(-margin))
}

func (ss *sourceServer) Commit(ctx context.Context, req *pb.SourceCommitRequest) (*pb.SourceCommitResponse, error) {
	e, ctx, end, err := enter(ctx, &ss.s.sources, KindSource, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	if err := e.task.Commit(ctx, req.GetPositions()); err != nil {
		return nil, err
	}
	return &pb.SourceCommitResponse{}, nil
}

// Close cancels a Read or Commit still in flight (the host may have given
// up on it while the task runs on), waits for it to return, then closes
// the task: the task's Close never overlaps its other calls.
func (ss *sourceServer) Close(ctx context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	e, err := ss.s.sources.remove(KindSource, req.GetHandle())
	if err != nil {
		return nil, err
	}
	if err := e.close(ctx, ss.s.log); err != nil {
		return nil, err
	}
	return &pb.CloseResponse{}, nil
}
