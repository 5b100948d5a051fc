package sdk

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk/internal/pb"
)

// hostClient is a source task's SourceHost: calls go back to the floe host
// over the go-plugin broker connection opened for this task.
type hostClient struct {
	c pb.SourceHostClient
}

func (h *hostClient) StartPositions(ctx context.Context, partitions []string) (map[string]int64, error) {
	resp, err := h.c.StartPositions(ctx, &pb.StartPositionsRequest{Partitions: partitions})
	if err != nil {
		return nil, hostError(ctx, "start positions", err)
	}
	return resp.GetPositions(), nil
}

func (h *hostClient) PartitionsRevoked(ctx context.Context, next map[string]int64) error {
	if _, err := h.c.PartitionsRevoked(ctx, &pb.PartitionsRevokedRequest{Positions: next}); err != nil {
		return hostError(ctx, "partitions revoked", err)
	}
	return nil
}

func (h *hostClient) AdmitSchema(ctx context.Context, s Schema) error {
	ps, err := schemaToProto(s)
	if err != nil {
		return fmt.Errorf("admit schema: %w", err)
	}
	resp, err := h.c.AdmitSchema(ctx, &pb.AdmitSchemaRequest{Schema: ps})
	if err != nil {
		return hostError(ctx, "admit schema", err)
	}
	if !resp.GetAccepted() {
		// The host's reason names the schema, the sink and its table.
		reason := resp.GetReason()
		if reason == "" {
			reason = "no reason given"
		}
		return RejectSchema("%s", reason)
	}
	return nil
}

func (h *hostClient) DeadLetter(ctx context.Context, records []DeadLetter) error {
	resp, err := h.c.DeadLetter(ctx, &pb.DeadLetterRequest{Records: deadLettersToProto(records)})
	if err != nil {
		return hostError(ctx, "dead letter", err)
	}
	if resp.GetFail() {
		reason := resp.GetReason()
		if reason == "" {
			reason = "errors.tolerance is none"
		}
		return fmt.Errorf("dead letter refused: %s", reason)
	}
	return nil
}

// hostError turns a failed call to the host into an error with the host's
// message (not the gRPC decoration around it). A call that timed out or
// was canceled wraps context.DeadlineExceeded or context.Canceled, after
// settle.
func hostError(ctx context.Context, op string, err error) error {
	settle(ctx, err)
	st, ok := status.FromError(err)
	switch {
	case !ok:
		return fmt.Errorf("floe host: %s: %w", op, err)
	case st.Code() == codes.DeadlineExceeded:
		return fmt.Errorf("floe host: %s: %w", op, context.DeadlineExceeded)
	case st.Code() == codes.Canceled:
		return fmt.Errorf("floe host: %s: %w", op, context.Canceled)
	}
	return fmt.Errorf("floe host: %s: %s", op, st.Message())
}

// settleWithin is how close ctx's deadline must be for settle to wait.
const settleWithin = time.Second

// settle waits, after a call to the host timed out, for ctx to end when
// its deadline is at hand. The host's side of the call runs on ctx's
// deadline, so on a loaded machine its timeout can come back before ctx's
// own timer has fired: a task that then checks ctx.Err() would take the
// end of its Read for a host failure and fail. After settle, ctx.Err()
// says what happened, and the task ends its call like any timeout.
func settle(ctx context.Context, err error) {
	if c := status.Code(err); c != codes.DeadlineExceeded && c != codes.Canceled {
		return
	}
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > settleWithin {
		return
	}
	t := time.NewTimer(time.Until(dl) + 100*time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C: // a deadline a late timer has not yet marked
	}
}
