package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Share is the part of a connector that one worker of a cluster runs
// (distributed mode): some of its source tasks, each with the worker's
// own partitioner and writers, and maybe its committer. Every worker
// publishes its flushed checkpoints through Link; the committer's worker
// commits them, once per commit interval, and answers through Link. A
// runtime without a Share runs the whole connector and commits itself
// (standalone).
type Share struct {
	// Worker names this worker in control messages.
	Worker string
	// Tasks lists the source tasks this worker runs.
	Tasks []int
	// Committer is set on the worker that commits the connector's
	// checkpoints. The cluster places one; during a move two may run for
	// a moment, which the table's fencing makes harmless.
	Committer bool
	// CommitterEpoch is the assignment epoch of the connector's current
	// committer, wherever it runs: when it changes, this worker publishes
	// its unanswered checkpoints again at once for the new committer.
	CommitterEpoch int64
	// Link carries the connector's checkpoints and answers. The runtime
	// closes it when it ends.
	Link ControlLink
}

// resendEvery is how long a worker waits for the committer's answer
// before it publishes a flushed checkpoint again (the committer may have
// moved and missed it, or the answer may be lost).
const resendEvery = 3 * time.Second

// syncTimeout bounds the wait for the control link to catch up before a
// source task learns where newly assigned partitions start.
const syncTimeout = 5 * time.Second

// shareState is a runtime's share and what the control link told it.
type shareState struct {
	worker string
	link   ControlLink

	mu             sync.Mutex
	tasks          map[int]bool
	committer      bool
	committerEpoch int64
	// changed is closed and replaced when tasks or the committer change.
	changed chan struct{}
	// frontier is the connector's newest committed frontier the link
	// reported, as of commit frontierCommit.
	frontier       map[string]int64
	frontierCommit uint64
	// distrusted is set when the committer refused one of this worker's
	// checkpoints for a gap the table does not explain: the worker had
	// started partitions at the reported frontier, which the table does
	// not hold. knownFrontier then answers nothing until a newer commit
	// than distrustedAt is reported.
	distrusted   bool
	distrustedAt uint64
	// outcomes holds the committer's answers about this worker's
	// checkpoints until the session waiting for them takes them.
	outcomes map[CheckpointRef]outcome
	// answered is closed and replaced on every answer.
	answered chan struct{}
	// readies counts the committers' Ready answers.
	readies int
	// inbox holds flushed checkpoints for the committer, while this
	// worker is the committer, by checkpoint: a repeat replaces the
	// first, so a committer held up (an outage) holds one copy of each.
	inbox   map[CheckpointRef]FlushedCheckpoint
	inboxCh chan struct{} // a token when inbox grew
}

// outcome is the committer's answer about one checkpoint.
type outcome struct {
	committed bool
	commit    uint64
	reason    string // why it was refused
}

func newShareState(sh Share) *shareState {
	st := &shareState{
		worker: sh.Worker, link: sh.Link,
		changed:  make(chan struct{}),
		frontier: map[string]int64{},
		outcomes: map[CheckpointRef]outcome{},
		answered: make(chan struct{}),
		inbox:    map[CheckpointRef]FlushedCheckpoint{},
		inboxCh:  make(chan struct{}, 1),
	}
	st.set(sh)
	return st
}

// set applies a new share; it reports whether the committer epoch
// changed.
func (st *shareState) set(sh Share) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.tasks = map[int]bool{}
	for _, t := range sh.Tasks {
		st.tasks[t] = true
	}
	st.committer, st.committerEpoch = sh.Committer, sh.CommitterEpoch
	if !st.committer {
		clear(st.inbox)
	}
	close(st.changed)
	st.changed = make(chan struct{})
}

// runs reports whether task i runs on this worker.
func (st *shareState) runs(i int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.tasks[i]
}

// localTasks returns the tasks this worker runs, sorted.
func (st *shareState) localTasks() []int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Sorted(maps.Keys(st.tasks))
}

// role returns whether this worker commits, the committer's epoch, and
// a channel closed at the next change.
func (st *shareState) role() (committer bool, epoch int64, changed <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.committer, st.committerEpoch, st.changed
}

// receive reads the link until ctx ends, handing flushed checkpoints to
// the committer's inbox (while this worker commits) and recording
// answers.
func (c *Connector) receiveControl(ctx context.Context) {
	st := c.share
	for {
		m, err := st.link.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Error("the connector's control link failed; its checkpoints cannot be committed", "error", err)
			}
			return
		}
		switch {
		case m.Flushed != nil:
			st.mu.Lock()
			if st.committer {
				st.inbox[m.Flushed.Ref] = *m.Flushed
				select {
				case st.inboxCh <- struct{}{}:
				default:
				}
			}
			st.mu.Unlock()
		case m.Answer != nil:
			st.answer(*m.Answer)
		}
	}
}

// answer records a committer's answer.
func (st *shareState) answer(a CommitAnswer) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if a.Ready {
		st.readies++
	}
	if a.Commit > st.frontierCommit && a.Frontier != nil {
		st.frontier, st.frontierCommit = maps.Clone(a.Frontier), a.Commit
	}
	for _, ref := range a.Covered {
		if ref.Worker == st.worker {
			st.outcomes[ref] = outcome{committed: true, commit: a.Commit}
		}
	}
	for _, r := range a.Refused {
		if r.Ref.Worker == st.worker {
			if _, known := st.outcomes[r.Ref]; !known {
				st.outcomes[r.Ref] = outcome{reason: r.Reason}
			}
			if r.Gap {
				st.distrusted, st.distrustedAt = true, st.frontierCommit
			}
		}
	}
	close(st.answered)
	st.answered = make(chan struct{})
}

// takeOutcome returns and forgets the answer about ref, if one came,
// and a channel closed at the next answer.
func (st *shareState) takeOutcome(ref CheckpointRef) (outcome, bool, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	o, ok := st.outcomes[ref]
	if ok {
		delete(st.outcomes, ref)
	}
	return o, ok, st.answered
}

// readyCount returns how many Ready answers came: a committer that
// started asks for the unanswered checkpoints again.
func (st *shareState) readyCount() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.readies
}

// forgetSession drops the answers kept for a session that ended.
func (st *shareState) forgetSession(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for ref := range st.outcomes {
		if ref.Session == id {
			delete(st.outcomes, ref)
		}
	}
}

// takeInbox returns the flushed checkpoints received for the committer
// since the last call.
func (st *shareState) takeInbox() []FlushedCheckpoint {
	st.mu.Lock()
	defer st.mu.Unlock()
	in := slices.Collect(maps.Values(st.inbox))
	clear(st.inbox)
	return in
}

// knownFrontier returns the newest committed frontier the link reported,
// or nil while it is distrusted (a gap refusal since, and no newer
// commit): a new session then starts from the table's frontier.
func (st *shareState) knownFrontier() map[string]int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.distrusted && st.frontierCommit <= st.distrustedAt {
		return nil
	}
	st.distrusted = false
	return maps.Clone(st.frontier)
}

// frontierAt returns the newest committed frontier the link reported and
// the commit it follows.
func (st *shareState) frontierAt() (map[string]int64, uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return maps.Clone(st.frontier), st.frontierCommit
}

// newSessionID names a session of this worker. It sorts by start time,
// so the committer can tell a worker's newest session from the ones it
// replaced.
func newSessionID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%020d-%s", time.Now().UnixNano(), hex.EncodeToString(b[:]))
}

// SetShare changes the part of the connector this worker runs: source
// tasks no longer listed stop (what they read is written and committed
// first), new ones start, and the committer starts or stops here. It
// does nothing on a runtime started without a Share.
func (c *Connector) SetShare(sh Share) {
	st := c.share
	if st == nil {
		return
	}
	before := st.localTasks()
	st.set(sh)
	after := st.localTasks()
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	for _, i := range before {
		if !slices.Contains(after, i) {
			c.logger.Info("task moved to another worker; stopping it here", "task", i)
			if s != nil {
				s.stopTask(i)
			}
			c.setTask(i, StateUnassigned, "")
		}
	}
	for _, i := range after {
		if !slices.Contains(before, i) && s != nil {
			c.logger.Info("task placed on this worker; starting it", "task", i)
			s.startTask(i)
		}
	}
}

// runsTask reports whether task i runs in this runtime.
func (c *Connector) runsTask(i int) bool {
	return c.share == nil || c.share.runs(i)
}

// LocalTasks returns the source tasks this runtime runs: all of them,
// or its share's.
func (c *Connector) LocalTasks() []int {
	if c.share == nil {
		out := make([]int, c.settings.Tasks)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return c.share.localTasks()
}

// Commits reports whether this runtime commits the connector's
// checkpoints: always standalone, in a cluster where its share holds
// the committer.
func (c *Connector) Commits() bool {
	if c.share == nil {
		return true
	}
	committer, _, _ := c.share.role()
	return committer
}
