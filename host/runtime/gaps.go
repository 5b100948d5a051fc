package runtime

import "time"

// A flushed checkpoint that starts above the committer's frontier waits
// for what fills the gap. A worker publishes an unanswered checkpoint
// again every resendEvery, so one lost on the way fills its gap well
// within Tuning.GapWait. A gap that outlasts it means the committer's
// frontier is behind the table (a commit it never heard of: its
// committer stopped before answering) or what filled it is lost for
// good; either way waiting longer would stall the connector.

// gapWatch tells the cluster committer which waiting checkpoints have
// waited on a gap for longer than wait, at most once per wait.
type gapWatch struct {
	wait    time.Duration
	since   map[CheckpointRef]time.Time
	checked time.Time
}

func newGapWatch(wait time.Duration) *gapWatch {
	return &gapWatch{wait: wait, since: map[CheckpointRef]time.Time{}}
}

// lingering records the plan's gaps at now and returns those that have
// waited wait, unless it returned some less than wait ago.
func (g *gapWatch) lingering(gaps []Refusal, now time.Time) []Refusal {
	seen := make(map[CheckpointRef]time.Time, len(gaps))
	var out []Refusal
	for _, r := range gaps {
		at, ok := g.since[r.Ref]
		if !ok {
			at = now
		}
		seen[r.Ref] = at
		if now.Sub(at) >= g.wait {
			out = append(out, r)
		}
	}
	g.since = seen
	if len(out) == 0 || now.Sub(g.checked) < g.wait {
		return nil
	}
	g.checked = now
	return out
}
