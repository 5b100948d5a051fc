package worker

import (
	"os"
	"runtime/debug"

	"github.com/floehq/floe/host/store"
)

// hostMemoryPart is the part of memory.max.bytes the host process keeps
// for itself (REST API, stores, metrics, the batches between a source and
// its sink), at least minHostMemory; the connectors share the rest.
const (
	hostMemoryPart = 0.15
	minHostMemory  = 48 << 20
)

// hostMemory is what the host keeps of a budget.
func hostMemory(budget int64) int64 {
	return max(int64(float64(budget)*hostMemoryPart), minHostMemory)
}

// limitHostMemory sets the host's GOMEMLIMIT to its part of the budget,
// unless the environment set one.
func limitHostMemory(budget int64) {
	if budget <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(hostMemory(budget))
}

// connectorMemory is one connector's share of memory.max.bytes: what the
// host does not keep, divided evenly among the connectors this worker
// runs, counted when the connector starts (one that was running keeps its
// share until it restarts). 0 without a budget.
func (w *Worker) connectorMemory() int64 {
	budget := w.cfg.MemoryMaxBytes
	if budget <= 0 {
		return 0
	}
	w.mu.Lock()
	conns := make([]*conn, 0, len(w.conns))
	for _, c := range w.conns {
		conns = append(conns, c)
	}
	w.mu.Unlock()
	n := 0
	for _, c := range conns {
		c.mu.Lock()
		active := c.target != store.TargetStopped
		c.mu.Unlock()
		if active && w.runsHere(c.name) {
			n++
		}
	}
	return max(budget-hostMemory(budget), 0) / int64(max(n, 1))
}
