package client

import (
	"context"
	"fmt"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/pb"
)

// MaintenanceOpen opens a connector's maintenance.
type MaintenanceOpen struct {
	Component string
	Connector string
	Config    map[string]string
}

// MaintenanceTask is maintenance in a plugin process. Cycle and Status may
// be called concurrently.
type MaintenanceTask struct {
	p      *Process
	handle uint64
	label  string
}

// OpenMaintenance opens maintenance.
func (p *Process) OpenMaintenance(ctx context.Context, req MaintenanceOpen) (*MaintenanceTask, error) {
	label := fmt.Sprintf("maintenance %q of connector %q", req.Component, req.Connector)
	resp, err := p.maintenance.Open(ctx, &pb.MaintenanceOpenRequest{
		Component: req.Component,
		Connector: req.Connector,
		Config:    req.Config,
	})
	if err != nil {
		return nil, p.openError(ctx, "maintenance", label, err)
	}
	return &MaintenanceTask{p: p, handle: resp.GetHandle(), label: label}, nil
}

// Cycle runs one maintenance round.
func (t *MaintenanceTask) Cycle(ctx context.Context, req sdk.CycleRequest) (sdk.CycleResult, error) {
	resp, err := t.p.maintenance.Cycle(ctx, &pb.CycleRequest{Handle: t.handle, Force: req.Force, DryRun: req.DryRun})
	if err != nil {
		return sdk.CycleResult{}, t.p.callError(ctx, t.label+": cycle", err)
	}
	return sdk.CycleResult{
		Runs:   taskRunsFromProto(resp.GetRuns()),
		Next:   time.Duration(resp.GetNextCycleMs()) * time.Millisecond,
		Tables: tableHealthFromProto(resp.GetTables()),
	}, nil
}

// Status returns table health and recent runs.
func (t *MaintenanceTask) Status(ctx context.Context) (sdk.MaintenanceStatus, error) {
	resp, err := t.p.maintenance.Status(ctx, &pb.MaintenanceStatusRequest{Handle: t.handle})
	if err != nil {
		return sdk.MaintenanceStatus{}, t.p.callError(ctx, t.label+": status", err)
	}
	return sdk.MaintenanceStatus{Tables: tableHealthFromProto(resp.GetTables()), Runs: taskRunsFromProto(resp.GetRuns())}, nil
}

// Close closes maintenance.
func (t *MaintenanceTask) Close(ctx context.Context) error {
	if _, err := t.p.maintenance.Close(ctx, &pb.CloseRequest{Handle: t.handle}); err != nil {
		return t.p.callError(ctx, t.label+": close", err)
	}
	return nil
}
