package client

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/pb"
)

// SourceHost is what the host serves to a source task (see sdk.SourceHost).
// Its methods are called from the plugin's goroutines, possibly at once.
type SourceHost interface {
	StartPositions(ctx context.Context, partitions []string) (map[string]int64, error)
	PartitionsRevoked(ctx context.Context, next map[string]int64) error
	// AdmitSchema returns nil, or an error wrapping sdk.ErrSchemaRejected.
	AdmitSchema(ctx context.Context, s Schema) error
	// DeadLetter returns nil when stored, an error when the task must fail.
	DeadLetter(ctx context.Context, records []sdk.DeadLetter) error
}

// hostServer serves one source task's SourceHost over go-plugin's broker.
type hostServer struct {
	pb.UnimplementedSourceHostServer
	h SourceHost

	mu      sync.Mutex
	srv     *grpc.Server
	stopped bool
}

func newHostServer(h SourceHost) *hostServer { return &hostServer{h: h} }

// newGRPCServer is handed to GRPCBroker.AcceptAndServe; it keeps the server
// so that stop can end it when the task closes (AcceptAndServe itself only
// returns when the whole broker closes).
func (hs *hostServer) newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.MaxRecvMsgSize(handshake.MaxMessageSize),
		grpc.MaxSendMsgSize(handshake.MaxMessageSize),
		grpc.ChainUnaryInterceptor(recoverHost),
	)
	s := grpc.NewServer(opts...)
	pb.RegisterSourceHostServer(s, hs)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.srv = s
	if hs.stopped {
		s.Stop() // Serve then returns at once
	}
	return s
}

func (hs *hostServer) stop() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.stopped = true
	if hs.srv != nil {
		hs.srv.Stop()
	}
}

// recoverHost keeps a panicking SourceHost from taking the host down.
func recoverHost(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "floe host: %s panicked: %v\n%s", info.FullMethod, r, debug.Stack())
		}
	}()
	return handler(ctx, req)
}

func (hs *hostServer) StartPositions(ctx context.Context, req *pb.StartPositionsRequest) (*pb.StartPositionsResponse, error) {
	pos, err := hs.h.StartPositions(ctx, req.GetPartitions())
	if err != nil {
		return nil, hostStatus(ctx, err)
	}
	return &pb.StartPositionsResponse{Positions: pos}, nil
}

func (hs *hostServer) PartitionsRevoked(ctx context.Context, req *pb.PartitionsRevokedRequest) (*pb.PartitionsRevokedResponse, error) {
	if err := hs.h.PartitionsRevoked(ctx, req.GetPositions()); err != nil {
		return nil, hostStatus(ctx, err)
	}
	return &pb.PartitionsRevokedResponse{}, nil
}

func (hs *hostServer) AdmitSchema(ctx context.Context, req *pb.AdmitSchemaRequest) (*pb.AdmitSchemaResponse, error) {
	if req.GetSchema() == nil {
		return nil, status.Error(codes.InvalidArgument, "admit schema: no schema in the request")
	}
	err := hs.h.AdmitSchema(ctx, schemaFromProto(req.GetSchema()))
	switch {
	case err == nil:
		return &pb.AdmitSchemaResponse{Accepted: true}, nil
	case errors.Is(err, sdk.ErrSchemaRejected):
		return &pb.AdmitSchemaResponse{Reason: sdk.RejectionReason(err)}, nil
	}
	return nil, hostStatus(ctx, err)
}

// hostStatus is a host call's failure as its answer: the code of the
// call's end when its time ran out or it was canceled (the source's
// client then waits for its own deadline and ends its Read like any
// timeout), Unknown with the host's message otherwise.
func hostStatus(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// DeadLetter answers a refusal in band, so the source gets the reason.
func (hs *hostServer) DeadLetter(ctx context.Context, req *pb.DeadLetterRequest) (*pb.DeadLetterResponse, error) {
	if err := hs.h.DeadLetter(ctx, deadLettersFromProto(req.GetRecords())); err != nil {
		return &pb.DeadLetterResponse{Fail: true, Reason: err.Error()}, nil
	}
	return &pb.DeadLetterResponse{}, nil
}
