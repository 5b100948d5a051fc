package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/pb"
)

// server is the plugin side of the protocol for one process: the
// components it serves, their open tasks, and the process logger. One value
// per process (or per in-process test server); nothing is global.
type server struct {
	components []Component
	log        *slog.Logger
	mem        memory.Allocator
	// maxBatchBytes bounds one encoded batch; tests lower it.
	maxBatchBytes int
	// maxResponseBytes bounds the batches of one Read response.
	maxResponseBytes int

	sources      handles[*sourceEntry]
	partitioners handles[*partitionerEntry]
	sinks        handles[*sinkEntry]
	maintenances handles[*maintenanceEntry]
}

func newServer(components []Component, log *slog.Logger) (*server, error) {
	if len(components) == 0 {
		return nil, errors.New("sdk.Serve: no components given")
	}
	seen := map[string]string{}
	for _, c := range components {
		if err := c.check(); err != nil {
			return nil, err
		}
		for _, name := range append([]string{c.Name}, c.Aliases...) {
			key := string(c.Kind()) + "/" + name
			if other, dup := seen[key]; dup {
				return nil, fmt.Errorf("sdk: two %s components answer to %q (%s and %s); names and aliases must be unique per kind",
					c.Kind(), name, other, c.Name)
			}
			seen[key] = c.Name
		}
		if err := checkSpec(c); err != nil {
			return nil, err
		}
	}
	return &server{
		components:       slices.Clone(components),
		log:              log,
		mem:              memory.DefaultAllocator,
		maxBatchBytes:    handshake.MaxBatchBytes,
		maxResponseBytes: handshake.MaxMessageSize - 1<<20,
	}, nil
}

// checkSpec rejects declarations that can never validate.
func checkSpec(c Component) error {
	names := map[string]bool{}
	for _, f := range c.Spec.Fields() {
		if f.Name == "" {
			return fmt.Errorf("sdk: component %q declares a config field with no name", c.Name)
		}
		if names[f.Name] {
			return fmt.Errorf("sdk: component %q declares config key %q twice", c.Name, f.Name)
		}
		names[f.Name] = true
	}
	return nil
}

// kinds lists the kinds the server has components of, in pipeline order.
func (s *server) kinds() []Kind {
	var out []Kind
	for _, k := range AllKinds() {
		if slices.ContainsFunc(s.components, func(c Component) bool { return c.Kind() == k }) {
			out = append(out, k)
		}
	}
	return out
}

// component finds a component of kind by name or alias.
func (s *server) component(kind Kind, name string) (Component, error) {
	var known []string
	for _, c := range s.components {
		if c.Kind() != kind {
			continue
		}
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c, nil
		}
		known = append(known, c.Name)
	}
	return Component{}, status.Errorf(codes.NotFound,
		"this plugin has no %s component %q (it has: %s)", kind, name, listOrNone(known))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// config validates raw against the component's spec and applies defaults.
// Errors name every bad key and come back as InvalidArgument with a
// BadRequest detail, so the host can show them key by key.
func (s *server) config(c Component, raw map[string]string) (Config, error) {
	errs := c.Spec.Validate(raw)
	if len(errs) == 0 {
		return c.Spec.Config(raw), nil
	}
	msgs := make([]string, len(errs))
	br := &errdetails.BadRequest{}
	for i, e := range errs {
		msgs[i] = e.Error()
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: e.Key, Description: e.Message})
	}
	st := status.Newf(codes.InvalidArgument, "invalid config for %s %q: %s", c.Kind(), c.Name, strings.Join(msgs, "; "))
	if withDetail, err := st.WithDetails(br); err == nil {
		st = withDetail
	}
	return Config{}, st.Err()
}

// grpcServer builds the process's gRPC server: go-plugin's default server
// with floe's message limit and the interceptor that turns panics and
// errors into statuses.
func (s *server) grpcServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.MaxRecvMsgSize(handshake.MaxMessageSize),
		grpc.MaxSendMsgSize(handshake.MaxMessageSize),
		grpc.ChainUnaryInterceptor(s.intercept),
	)
	return plugin.DefaultGRPCServer(opts)
}

// intercept runs one call: a panic becomes an Internal error for that call
// (with the stack in the plugin's log) instead of killing the process and
// every other task in it, and plain errors become statuses the host maps
// back to the SDK's sentinel errors.
func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			method := methodName(info.FullMethod)
			s.log.Error("plugin call panicked", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "%s panicked: %v (the stack is in the plugin's log)", method, r)
		}
	}()
	resp, err = handler(ctx, req)
	if err != nil {
		err = toStatus(err)
	}
	return resp, err
}

// methodName turns "/floe.plugin.v1.Source/Read" into "source Read".
func methodName(full string) string {
	svc, m, ok := strings.Cut(strings.TrimPrefix(full, "/floe.plugin.v1."), "/")
	if !ok {
		return full
	}
	return strings.ToLower(svc) + " " + m
}

// toStatus maps an error from plugin code to a gRPC status carrying its
// message and, for the SDK's sentinels, a machine-readable reason.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	code, reason := codes.Unknown, ""
	switch {
	case errors.Is(err, ErrSchemaRejected):
		code, reason = codes.FailedPrecondition, handshake.ReasonSchemaRejected
	case errors.Is(err, ErrRecordTooLarge):
		code, reason = codes.ResourceExhausted, handshake.ReasonRecordTooLarge
	case errors.Is(err, ErrUnsupported):
		code, reason = codes.Unimplemented, handshake.ReasonUnsupported
	case errors.Is(err, ErrEndOfInput):
		code, reason = codes.OutOfRange, handshake.ReasonEndOfInput
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	reasons := []string{}
	if reason != "" {
		reasons = append(reasons, reason)
	}
	// The transient/permanent mark travels as its own ErrorInfo, so an
	// error can be both (say) schema-rejected and permanent.
	switch {
	case errors.Is(err, ErrPermanent):
		if reason == "" {
			code = codes.FailedPrecondition
		}
		reasons = append(reasons, handshake.ReasonPermanent)
	case errors.Is(err, ErrTransient):
		if reason == "" {
			code = codes.Unavailable
		}
		reasons = append(reasons, handshake.ReasonTransient)
	}
	st := status.New(code, err.Error())
	for _, r := range reasons {
		if withDetail, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: r, Domain: handshake.ErrorDomain}); derr == nil {
			st = withDetail
		}
	}
	return st.Err()
}

// handles is one kind's table of open tasks. Open adds, Close removes;
// every other call looks its task up by handle.
type handles[T any] struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]T
}

func (h *handles[T]) add(v T) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[uint64]T{}
	}
	h.next++
	h.m[h.next] = v
	return h.next
}

func (h *handles[T]) get(kind Kind, id uint64) (T, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[id]
	if !ok {
		return v, status.Errorf(codes.NotFound,
			"no open %s task with handle %d in this plugin process (it was closed, or the process restarted since Open)", kind, id)
	}
	return v, nil
}

func (h *handles[T]) remove(kind Kind, id uint64) (T, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[id]
	if !ok {
		return v, status.Errorf(codes.NotFound, "no open %s task with handle %d in this plugin process (closed twice?)", kind, id)
	}
	delete(h.m, id)
	return v, nil
}

// drain removes and returns every open task.
func (h *handles[T]) drain() []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]T, 0, len(h.m))
	for id, v := range h.m {
		out = append(out, v)
		delete(h.m, id)
	}
	return out
}

// closeAll closes every task still open when the server stops, so
// in-process servers and plugins ended by the host release what they hold.
// As Close does, it first ends the calls in flight on each task. The
// closes get timeout; ctx's end does not cut them short (the server runs
// closeAll because its context ended).
func (s *server) closeAll(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var wg sync.WaitGroup
	closeEach := func(close func(context.Context, *slog.Logger) error) {
		wg.Go(func() { _ = close(ctx, s.log) })
	}
	for _, e := range s.sources.drain() {
		closeEach(e.close)
	}
	for _, e := range s.partitioners.drain() {
		closeEach(e.close)
	}
	for _, e := range s.sinks.drain() {
		closeEach(e.close)
	}
	for _, e := range s.maintenances.drain() {
		closeEach(e.close)
	}
	wg.Wait()
}

// safeClose calls a task's Close, turning a panic into an error.
func safeClose(ctx context.Context, what string, close func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: Close panicked: %v", what, r)
		}
	}()
	return close(ctx)
}

// pluginSet returns go-plugin's plugin set: describe plus one entry per
// kind the process serves.
func (s *server) pluginSet() plugin.PluginSet {
	set := plugin.PluginSet{handshake.Describe: &grpcPlugin{register: func(_ *plugin.GRPCBroker, g *grpc.Server) {
		pb.RegisterDescribeServer(g, &describeServer{s: s})
	}}}
	for _, k := range s.kinds() {
		switch k {
		case KindSource:
			set[handshake.Source] = &grpcPlugin{register: func(b *plugin.GRPCBroker, g *grpc.Server) {
				pb.RegisterSourceServer(g, &sourceServer{s: s, broker: b})
			}}
		case KindPartitioner:
			set[handshake.Partitioner] = &grpcPlugin{register: func(_ *plugin.GRPCBroker, g *grpc.Server) {
				pb.RegisterPartitionerServer(g, &partitionerServer{s: s})
			}}
		case KindSink:
			set[handshake.Sink] = &grpcPlugin{register: func(_ *plugin.GRPCBroker, g *grpc.Server) {
				pb.RegisterSinkServer(g, &sinkServer{s: s})
			}}
		case KindMaintenance:
			set[handshake.Maintenance] = &grpcPlugin{register: func(_ *plugin.GRPCBroker, g *grpc.Server) {
				pb.RegisterMaintenanceServer(g, &maintenanceServer{s: s})
			}}
		}
	}
	return set
}

// grpcPlugin registers one service on the plugin's gRPC server. It is only
// ever served, never dispensed: the host side has its own.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	register func(*plugin.GRPCBroker, *grpc.Server)
}

func (p *grpcPlugin) GRPCServer(b *plugin.GRPCBroker, g *grpc.Server) error {
	p.register(b, g)
	return nil
}

func (p *grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("sdk: the plugin side cannot dispense a client")
}
