package iceberg

import (
	"maps"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// summaryReset marks the commit that applied an offset override.
const summaryReset = lake.SummaryOffsetsReset

// offsetsReset is the host's pending offset override
// (sdk.SinkOpenRequest.OffsetsReset, whose doc is the contract). For a
// table whose newest commit of the connector is still at or before
// AfterCheckpoint, the positions replace the table's frontier: writers
// drop nothing below them as replays, the next commit's ranges are fenced
// against them, and that commit's summary says floe.offsets.reset=true. A
// table committed past AfterCheckpoint has applied it already.
type offsetsReset sdk.OffsetsReset

// appliesTo reports whether the override still applies to a table with
// history h.
func (r *offsetsReset) appliesTo(h history) bool {
	return r != nil && (!h.found || h.newest.checkpoint <= r.AfterCheckpoint)
}

func (r *offsetsReset) positions() map[string]int64 {
	if r.Positions == nil {
		return map[string]int64{}
	}
	return maps.Clone(r.Positions)
}
