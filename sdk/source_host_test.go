package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestHostTimeoutEndsTheRead: the host's answer that a call timed out can
// arrive before the task's own deadline timer fires (the host runs on the
// same deadline). hostError waits for ctx to end, so the task sees
// ctx.Err() and ends its Read instead of failing; other failures return at
// once and keep the host's message.
func TestHostTimeoutEndsTheRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err := hostError(ctx, "admit schema", status.Error(codes.DeadlineExceeded, "context deadline exceeded"))
	if ctx.Err() == nil {
		t.Fatalf("hostError returned %v before the read's deadline: the task would take it for a host failure", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "admit schema") {
		t.Fatalf("err = %v; want it to wrap context.DeadlineExceeded and name the call", err)
	}

	// A refusal is not a timeout: no wait, the host's message kept.
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = hostError(ctx, "admit schema", status.Error(codes.Unknown, "schema 7: sink failed"))
	if time.Since(start) > 100*time.Millisecond || ctx.Err() != nil || err.Error() != "floe host: admit schema: schema 7: sink failed" {
		t.Fatalf("err = %v after %s; want the host's message at once", err, time.Since(start))
	}
	// A timeout with a distant deadline (or none) is not the Read's end:
	// no wait either.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start = time.Now()
	if err = hostError(ctx, "start positions", status.Error(codes.DeadlineExceeded, "slow")); time.Since(start) > 100*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v after %s; want DeadlineExceeded at once", err, time.Since(start))
	}
}
