package sdk

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
		return nil, hostError("start positions", err)
	}
	return resp.GetPositions(), nil
}

func (h *hostClient) PartitionsRevoked(ctx context.Context, next map[string]int64) error {
	if _, err := h.c.PartitionsRevoked(ctx, &pb.PartitionsRevokedRequest{Positions: next}); err != nil {
		return hostError("partitions revoked", err)
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
		return hostError("admit schema", err)
	}
	if !resp.GetAccepted() {
		reason := strings.TrimPrefix(resp.GetReason(), ErrSchemaRejected.Error()+": ")
		if reason == "" {
			reason = "no reason given"
		}
		return RejectSchema("schema %d: %s", s.ID, reason)
	}
	return nil
}

func (h *hostClient) DeadLetter(ctx context.Context, records []DeadLetter) error {
	resp, err := h.c.DeadLetter(ctx, &pb.DeadLetterRequest{Records: deadLettersToProto(records)})
	if err != nil {
		return hostError("dead letter", err)
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
// message (not the gRPC decoration around it).
func hostError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("floe host: %s: %w", op, err)
	}
	if st, ok := status.FromError(err); ok {
		return fmt.Errorf("floe host: %s: %s", op, st.Message())
	}
	return fmt.Errorf("floe host: %s: %w", op, err)
}
