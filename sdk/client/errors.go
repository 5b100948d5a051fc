package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/handshake"
)

// Error is a call into a plugin that failed.
type Error struct {
	// Plugin is the binary's path (or the attached server's label).
	Plugin string
	// Op names the call: `source "datagen" task 0 of connector "orders": read`.
	Op string
	// Message is the plugin's error message, or what went wrong on the way.
	Message string
	// ConfigErrors lists every bad key when the plugin refused a config.
	ConfigErrors []sdk.ConfigError
	// Exited is set when the plugin process ended during the call.
	Exited bool

	sentinel error
	class    error // sdk.ErrTransient or sdk.ErrPermanent, when the plugin marked its error
}

func (e *Error) Error() string {
	return fmt.Sprintf("plugin %s: %s: %s", baseName(e.Plugin), e.Op, e.Message)
}

// Unwrap returns the SDK sentinels the plugin's error wrapped, if any:
// one of sdk.ErrSchemaRejected, sdk.ErrRecordTooLarge, sdk.ErrUnsupported,
// sdk.ErrEndOfInput, and sdk.ErrTransient or sdk.ErrPermanent when the
// plugin marked its error so.
func (e *Error) Unwrap() []error {
	var out []error
	for _, s := range []error{e.sentinel, e.class} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// callError turns a failed gRPC call into an *Error naming the plugin and
// the call. A call cut short by the caller's ctx returns ctx's error
// wrapped, so errors.Is(err, context.Canceled) holds.
func (p *Process) callError(ctx context.Context, op string, err error) error {
	st, _ := status.FromError(err)
	code := st.Code()
	if (code == codes.Canceled || code == codes.DeadlineExceeded) && ctxEnded(ctx) {
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		return fmt.Errorf("plugin %s: %s: %w", baseName(p.name), op, cause)
	}
	e := &Error{Plugin: p.name, Op: op, Message: st.Message()}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() != handshake.ErrorDomain {
				continue
			}
			switch d.GetReason() {
			case handshake.ReasonSchemaRejected:
				e.sentinel = sdk.ErrSchemaRejected
			case handshake.ReasonRecordTooLarge:
				e.sentinel = sdk.ErrRecordTooLarge
			case handshake.ReasonUnsupported:
				e.sentinel = sdk.ErrUnsupported
			case handshake.ReasonEndOfInput:
				e.sentinel = sdk.ErrEndOfInput
			case handshake.ReasonTransient:
				e.class = sdk.ErrTransient
			case handshake.ReasonPermanent:
				e.class = sdk.ErrPermanent
			}
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.ConfigErrors = append(e.ConfigErrors, sdk.ConfigError{Key: v.GetField(), Message: v.GetDescription()})
			}
		}
	}
	// A broken connection is the process's death, whether or not
	// go-plugin has seen it exit yet (under CPU starvation that can take
	// seconds). An Unavailable the plugin answered itself (a marked
	// error) is not.
	if (code == codes.Unavailable || code == codes.Canceled) && e.class == nil {
		if p.hasExited(exitWait) || p.connLost(st) {
			if !p.hasExited(0) {
				// Its connection is gone: it cannot serve another call.
				// Kill it, so that it is restarted the normal way.
				p.Kill()
				e.Message = "the connection to the plugin process broke (" + st.Message() + "); floe killed it: " + p.reason()
			} else {
				e.Message = "the plugin process ended: " + p.reason()
			}
			e.Exited = true
			e.sentinel, e.class, e.ConfigErrors = nil, nil, nil
			return e
		}
	}
	if e.sentinel == nil && code == codes.Unimplemented {
		e.sentinel = sdk.ErrUnsupported
	}
	return e
}

// exitWait is how long a call that failed with a broken-connection code
// waits for go-plugin to see the process exit, before the connection's
// own state decides (connLost).
const exitWait = 500 * time.Millisecond

// connLost reports whether a failed call's status says the connection to
// the plugin broke (transport errors, which the plugin cannot send), or
// the connection is no longer usable, rather than carrying the plugin's
// own answer.
func (p *Process) connLost(st *status.Status) bool {
	msg := st.Message()
	for _, s := range []string{"error reading from server", "transport is closing", "the client connection is closing"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	if p.conn == nil {
		return false
	}
	switch p.conn.GetState() {
	case connectivity.TransientFailure, connectivity.Shutdown:
		return true
	}
	return false
}

// ctxEnded reports whether ctx is over, or so nearly over that a call
// cancelled now was cut short by it: the plugin's side of a call may time
// out a moment before the caller's timer fires.
func ctxEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < 100*time.Millisecond
}
