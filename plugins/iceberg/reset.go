package iceberg

import (
	"encoding/json"
	"fmt"
	"github.com/floehq/floe/lake"
	"maps"
	"strings"
)

// keyOffsetsReset is set by the host on the sink's config while a user's
// offset override (PATCH/DELETE /connectors/{c}/offsets) waits for its
// first commit: {"positions": {...}, "after_checkpoint": N}.
const keyOffsetsReset = "floe.offsets.reset"

// summaryReset marks the commit that applied an offset override.
const summaryReset = lake.SummaryOffsetsReset

// offsetsReset is a pending offset override. For a table whose newest
// commit of the connector is still at or before afterCheckpoint, the
// positions replace the table's frontier: writers drop nothing below them
// as replays, the next commit's ranges are fenced against them, and that
// commit's summary says floe.offsets.reset=true. A table committed past
// afterCheckpoint has applied it already (host/runtime, "Offset
// overrides").
type offsetsReset struct {
	Positions       map[string]int64 `json:"positions"`
	AfterCheckpoint uint64           `json:"after_checkpoint"`
}

func parseOffsetsReset(v string) (*offsetsReset, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var r offsetsReset
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("iceberg sink: %s (set by the host) is not {\"positions\": {...}, \"after_checkpoint\": N}: %w", keyOffsetsReset, err)
	}
	if r.Positions == nil {
		r.Positions = map[string]int64{}
	}
	return &r, nil
}

// appliesTo reports whether the override still applies to a table with
// history h.
func (r *offsetsReset) appliesTo(h history) bool {
	return r != nil && (!h.found || h.newest.checkpoint <= r.AfterCheckpoint)
}

func (r *offsetsReset) positions() map[string]int64 { return maps.Clone(r.Positions) }
