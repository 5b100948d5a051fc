package sdktest

import (
	"context"
	"maps"
	"sync"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// recordingHost is the source kit's SourceHost: it answers StartPositions
// from what the kit sets, admits (or rejects) every schema, stores dead
// letters, and records every call so the kit can check their order.
type recordingHost struct {
	mu          sync.Mutex
	positions   map[string]int64
	reject      bool
	admitted    map[int64]client.Schema
	deadLetters []sdk.DeadLetter
	revoked     []map[string]int64
	startCalls  int
}

func newRecordingHost(positions map[string]int64) *recordingHost {
	return &recordingHost{positions: positions, admitted: map[int64]client.Schema{}}
}

func (h *recordingHost) StartPositions(_ context.Context, partitions []string) (map[string]int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.startCalls++
	out := map[string]int64{}
	for _, p := range partitions {
		if pos, ok := h.positions[p]; ok {
			out[p] = pos
		}
	}
	if len(partitions) == 0 {
		maps.Copy(out, h.positions)
	}
	return out, nil
}

func (h *recordingHost) PartitionsRevoked(_ context.Context, next map[string]int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revoked = append(h.revoked, maps.Clone(next))
	return nil
}

func (h *recordingHost) AdmitSchema(_ context.Context, s client.Schema) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reject {
		return sdk.RejectSchema("the conformance kit rejects every schema in this check")
	}
	h.admitted[s.ID] = s
	return nil
}

func (h *recordingHost) DeadLetter(_ context.Context, records []sdk.DeadLetter) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deadLetters = append(h.deadLetters, records...)
	return nil
}

// admittedSchema returns the schema admitted under id, if any.
func (h *recordingHost) admittedSchema(id int64) (client.Schema, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.admitted[id]
	return s, ok
}

func (h *recordingHost) deadLetterCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.deadLetters)
}

func (h *recordingHost) startPositionCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.startCalls
}
