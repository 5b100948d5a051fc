package runtime

import (
	"math"

	"github.com/floehq/floe/sdk"
)

// A worker's memory budget (its memory.max.bytes) bounds what floe and
// its plugin processes hold. The worker keeps a part for the host process
// and gives each connector a share (Options.MemoryBytes); the connector
// divides its share among its plugin processes by these weights, over the
// kinds it runs. Each process gets its part as GOMEMLIMIT and as
// floe.memory.bytes in its config, and sizes its buffers to it (the kafka
// source its fetch queue and record buffer, the iceberg sink its open data
// files). The sink and the source hold the data; the partitioner sees key
// columns only. The maintenance process is outside the budget: compaction's
// working set is bounded by its own
// maintenance.rewrite-data-files.max-bytes-per-run, and a Go heap limit
// cut to a share of the data path's would have it collect garbage instead
// of compacting.
var memoryWeights = map[sdk.Kind]float64{
	sdk.KindSource:      0.34,
	sdk.KindPartitioner: 0.08,
	sdk.KindSink:        0.58,
}

// binaryPages is what a plugin process holds resident beyond its Go
// memory and its buffers: the pages of its binary's code and read-only
// data that the steady state touches (bench section 2, at the moment the
// summed RSS peaked: 39-46 MiB for the kafka and iceberg plugins, 13-14
// for the partitioners). They count in the RSS the budget bounds, so they
// come off the connector's share before it is divided.
const binaryPages = 32 << 20

// minProcessMemory is the least a plugin process is given: a Go process
// with its runtime, its code and a few buffers needs that much whatever
// the budget says.
const minProcessMemory = 24 << 20

// memoryShares divides a connector's share among its processes, less
// each one's binaryPages. A process whose memory the config sets
// (process.<kind>.memory) keeps that, and the others share the rest. It
// returns nil without a budget.
func memoryShares(total int64, kinds []sdk.Kind, fixed map[sdk.Kind]int64) map[sdk.Kind]int64 {
	if total <= 0 {
		return nil
	}
	out := map[sdk.Kind]int64{}
	left, weight := total-binaryPages*int64(len(kinds)), 0.0
	for _, k := range kinds {
		if f := fixed[k]; f > 0 {
			out[k] = f
			left -= f
			continue
		}
		weight += memoryWeights[k]
	}
	for _, k := range kinds {
		if _, ok := out[k]; ok {
			continue
		}
		out[k] = max(int64(math.Floor(float64(max(left, 0))*memoryWeights[k]/weight)), minProcessMemory)
	}
	return out
}

// applyMemory gives each data-path process of the connector its part of
// memBytes: GOMEMLIMIT through its limits (unless process.<kind>.memory
// set one) and the value plugins read as floe.memory.bytes.
func (s *Settings) applyMemory(memBytes int64) {
	kinds := []sdk.Kind{sdk.KindSource, sdk.KindPartitioner, sdk.KindSink}
	fixed := map[sdk.Kind]int64{}
	for _, k := range kinds {
		fixed[k] = s.Processes[k].MemoryBytes
	}
	s.Memory = memoryShares(memBytes, kinds, fixed)
	for k, b := range s.Memory {
		l := s.Processes[k]
		l.MemoryBytes = b
		s.Processes[k] = l
	}
}
