package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// A static member that closes or dies between the two halves of a
// cooperative rebalance (it gave partitions up and had yet to rejoin so
// that they could be handed on) leaves the group Stable with those
// partitions assigned to nobody: its successor, joining with the same
// group.instance.id, gets the member's current assignment without a
// rebalance (KIP-345), and nothing else starts one. The distributed soak
// met it: a worker restarted its share of a connector for a config
// change right after such a revocation, and three of six partitions were
// read by no task until the test gave up. Each task of a static group
// therefore checks the group every coverageEvery; when the same
// partitions have stayed unassigned in a Stable group for coverageStuck,
// one member (the one holding the fewest partitions, ties by id) leaves
// and joins again, which starts a rebalance that hands them out.
const (
	coverageEvery = 5 * time.Second
	// coverageStuck is longer than the gap a healthy cooperative
	// rebalance leaves between its halves (the revoking task checkpoints
	// what it gives up first).
	coverageStuck = 15 * time.Second
	// coverageCallTimeout bounds one look at the group.
	coverageCallTimeout = 5 * time.Second
	// coverageBackoffMax bounds the wait between two rejoins of one task
	// when a rejoin did not help (new partitions the group's leader does
	// not know of yet, say).
	coverageBackoffMax = 2 * time.Minute
)

// groupView is what one look at the group found.
type groupView struct {
	stable bool
	// held is the number of partitions each member holds, by member
	// (group.instance.id, or the member id of a dynamic member).
	held map[string]int
	// unassigned are the subscribed partitions no member holds, sorted.
	unassigned []string
}

// chosen is the member that rejoins: the one holding the fewest
// partitions (it gives the least up), ties to the smallest id.
func (g groupView) chosen() string {
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range g.held {
			if !yield(id) {
				return
			}
		}
	})
	best := ""
	for _, id := range ids {
		if best == "" || g.held[id] < g.held[best] {
			best = id
		}
	}
	return best
}

// coverageWatch remembers, across looks, how long the group has shown
// the same unassigned partitions, and when this task may rejoin again.
type coverageWatch struct {
	self      string
	seen      string // the unassigned partitions and the members last seen
	since     time.Time
	backoff   time.Duration
	notBefore time.Time
}

// observe takes one look's view and reports whether this task should
// leave the group and join again now.
func (w *coverageWatch) observe(now time.Time, g groupView) bool {
	if !g.stable || len(g.unassigned) == 0 {
		w.seen = ""
		return false
	}
	members := make([]string, 0, len(g.held))
	for id := range g.held {
		members = append(members, id)
	}
	slices.Sort(members)
	seen := strings.Join(g.unassigned, ",") + "|" + strings.Join(members, ",")
	if seen != w.seen {
		w.seen, w.since = seen, now
		return false
	}
	if now.Sub(w.since) < coverageStuck || now.Before(w.notBefore) || g.chosen() != w.self {
		return false
	}
	w.seen = ""
	w.backoff = min(max(2*w.backoff, 2*coverageStuck), coverageBackoffMax)
	w.notBefore = now.Add(w.backoff)
	return true
}

// watchCoverage runs for the life of a static member's task (until ctx
// ends), on its own goroutine: it looks at the group every coverageEvery
// and asks the poll goroutine to rejoin (t.rejoin) when observe says so.
func (t *task) watchCoverage(ctx context.Context) {
	instance, _ := t.set.kafka["group.instance.id"].(string)
	w := &coverageWatch{self: instance}
	tick := time.NewTicker(coverageEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g, err := t.lookAtGroup(ctx)
		if err != nil {
			t.log.Debug("kafka: could not look at the group's assignment", "group", t.set.groupID, "error", err)
			continue
		}
		if w.observe(time.Now(), g) {
			t.log.Warn("kafka: partitions of the subscription have been assigned to no member of a stable group "+
				"(a static member left between the two halves of a cooperative rebalance); this task leaves the group and joins again, which hands them out",
				"group", t.set.groupID, "unassigned", strings.Join(g.unassigned, ", "), "for", coverageStuck)
			t.rejoin.Store(true)
		}
	}
}

// lookAtGroup describes the group and the subscribed topics through the
// task's current consumer.
func (t *task) lookAtGroup(ctx context.Context) (groupView, error) {
	ctx, cancel := context.WithTimeout(ctx, coverageCallTimeout)
	defer cancel()
	m := t.current.Load()
	m.calls.RLock()
	defer m.calls.RUnlock()
	if m.IsClosed() || m.fenced.Load() {
		return groupView{}, errors.New("the consumer is closing")
	}
	admin, err := ckafka.NewAdminClientFromConsumer(m.Consumer)
	if err != nil {
		return groupView{}, err
	}
	defer admin.Close()
	res, err := admin.DescribeConsumerGroups(ctx, []string{t.set.groupID}, ckafka.SetAdminRequestTimeout(coverageCallTimeout))
	if err != nil {
		return groupView{}, err
	}
	if len(res.ConsumerGroupDescriptions) != 1 {
		return groupView{}, fmt.Errorf("describe group %s: %d descriptions", t.set.groupID, len(res.ConsumerGroupDescriptions))
	}
	d := res.ConsumerGroupDescriptions[0]
	if d.Error.Code() != ckafka.ErrNoError {
		return groupView{}, d.Error
	}
	partitions, err := t.subscribedPartitions(m)
	if err != nil {
		return groupView{}, err
	}
	g := groupView{stable: d.State == ckafka.ConsumerGroupStateStable, held: map[string]int{}}
	held := map[string]bool{}
	for _, mem := range d.Members {
		id := mem.GroupInstanceID
		if id == "" {
			id = mem.ConsumerID
		}
		g.held[id] += len(mem.Assignment.TopicPartitions)
		for _, tp := range mem.Assignment.TopicPartitions {
			held[partitionName(topicOf(tp), tp.Partition)] = true
		}
	}
	for _, p := range partitions {
		if !held[p] {
			g.unassigned = append(g.unassigned, p)
		}
	}
	slices.Sort(g.unassigned)
	return g, nil
}

// subscribedPartitions lists the partitions of the topics the task
// subscribes to (those matching topics.regex), from fresh metadata.
func (t *task) subscribedPartitions(m *member) ([]string, error) {
	const timeoutMs = int(coverageCallTimeout / time.Millisecond)
	var topics []ckafka.TopicMetadata
	if t.set.topicsRegex != "" {
		re, err := regexp.Compile(t.set.topicsRegex)
		if err != nil {
			return nil, fmt.Errorf("topics.regex %q: %w", t.set.topicsRegex, err)
		}
		md, err := m.GetMetadata(nil, true, timeoutMs)
		if err != nil {
			return nil, err
		}
		for name, tm := range md.Topics {
			if re.MatchString(name) {
				topics = append(topics, tm)
			}
		}
	}
	for _, name := range t.set.topics {
		md, err := m.GetMetadata(&name, false, timeoutMs)
		if err != nil {
			return nil, err
		}
		if tm, ok := md.Topics[name]; ok && tm.Error.Code() == ckafka.ErrNoError {
			topics = append(topics, tm)
		}
	}
	var out []string
	for _, tm := range topics {
		for _, p := range tm.Partitions {
			out = append(out, partitionName(tm.Topic, p.ID))
		}
	}
	return out, nil
}

// rejoinGroup leaves the group and joins it again (on the poll
// goroutine): unsubscribing makes a static member send LeaveGroup (it
// only keeps quiet when it closes), and the revocation hands this task's
// partitions back as in any rebalance; subscribe runs once they are gone
// (resubscribe).
func (t *task) rejoinGroup() {
	if err := t.c.Unsubscribe(); err != nil {
		t.log.Warn("kafka: leaving the group to rejoin it failed", "group", t.set.groupID, "error", err)
		return
	}
	t.resubscribe = true
}

// resubscribeWhenUnassigned subscribes again once the unsubscription of
// rejoinGroup has taken every partition away (on the poll goroutine).
func (t *task) resubscribeWhenUnassigned() {
	if !t.resubscribe {
		return
	}
	parts, err := t.c.Assignment()
	if err != nil || len(parts) > 0 {
		return
	}
	t.resubscribe = false
	if err := t.subscribe(t.c); err != nil {
		t.buf.fail(err)
		return
	}
	t.log.Info("kafka: joined the group again", "group", t.set.groupID)
}
