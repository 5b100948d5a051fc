package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/floehq/floe/sdk/internal/pb"
)

// maintenanceServer adapts the process's Maintenance components to the
// Maintenance service.
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s *server
}

type maintenanceEntry struct {
	task  MaintenanceTask
	label string
	// calls keeps Close after the calls in flight.
	calls calls
}

func (e *maintenanceEntry) inflight() *calls { return &e.calls }

// close closes the task once its calls in flight have returned.
func (e *maintenanceEntry) close(ctx context.Context, log *slog.Logger) error {
	return e.calls.close(ctx, e.label, log, func(ctx context.Context) error {
		return safeClose(ctx, e.label, e.task.Close)
	})
}

func (ms *maintenanceServer) Open(ctx context.Context, req *pb.MaintenanceOpenRequest) (*pb.MaintenanceOpenResponse, error) {
	c, err := ms.s.component(KindMaintenance, req.GetComponent())
	if err != nil {
		return nil, err
	}
	cfg, err := ms.s.config(c, req.GetConfig())
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("maintenance %q of connector %q", c.Name, req.GetConnector())
	task, err := c.Maintenance.Open(ctx, MaintenanceOpenRequest{
		Connector: req.GetConnector(),
		Config:    cfg,
		Logger:    ms.s.log.With("connector", req.GetConnector(), "component", c.Name),
	})
	if err != nil {
		return nil, err
	}
	if task == nil {
		return nil, errors.New("Open returned neither a task nor an error")
	}
	return &pb.MaintenanceOpenResponse{Handle: ms.s.maintenances.add(&maintenanceEntry{task: task, label: label})}, nil
}

func (ms *maintenanceServer) Cycle(ctx context.Context, req *pb.CycleRequest) (*pb.CycleResponse, error) {
	e, ctx, end, err := enter(ctx, &ms.s.maintenances, KindMaintenance, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	res, err := e.task.Cycle(ctx, CycleRequest{Force: req.GetForce(), DryRun: req.GetDryRun()})
	if err != nil {
		return nil, err
	}
	return &pb.CycleResponse{Runs: taskRunsToProto(res.Runs), NextCycleMs: res.Next.Milliseconds(), Tables: tableHealthToProto(res.Tables)}, nil
}

func (ms *maintenanceServer) Status(ctx context.Context, req *pb.MaintenanceStatusRequest) (*pb.MaintenanceStatusResponse, error) {
	e, ctx, end, err := enter(ctx, &ms.s.maintenances, KindMaintenance, req.GetHandle())
	if err != nil {
		return nil, err
	}
	defer end()
	st, err := e.task.Status(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.MaintenanceStatusResponse{Tables: tableHealthToProto(st.Tables), Runs: taskRunsToProto(st.Runs)}, nil
}

func (ms *maintenanceServer) Close(ctx context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	e, err := ms.s.maintenances.remove(KindMaintenance, req.GetHandle())
	if err != nil {
		return nil, err
	}
	if err := e.close(ctx, ms.s.log); err != nil {
		return nil, err
	}
	return &pb.CloseResponse{}, nil
}
