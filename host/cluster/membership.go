package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
)

// Defaults of Config, Kafka Connect's worker defaults.
const (
	DefaultSessionTimeout    = 10 * time.Second
	DefaultHeartbeatInterval = 3 * time.Second
	// DefaultReplicationFactor is the cluster topic's replication factor,
	// capped at the broker count. The topic holds no records; its
	// replicas only keep partition 0 (the leader's seat) available when a
	// broker is down.
	DefaultReplicationFactor = 3
	// KeyGroupID is the worker config key whose value names the cluster.
	KeyGroupID = "group.id"
)

// assignor is the partition assignor of the membership group. Cooperative
// sticky keeps partition 0 where it is when members come and go, so a
// join does not move the leadership.
const assignor = "cooperative-sticky"

// TopicName returns the cluster topic of a group.id: one partition,
// compacted, never written; its owner is the leader.
func TopicName(groupID string) string { return groupID + "-floe-cluster" }

// Config says how a worker joins its cluster.
type Config struct {
	// Kafka reaches the cluster's brokers (kclient.FromWorker).
	Kafka kclient.Config
	// GroupID is the worker config's group.id: the membership group's id
	// and the root of the cluster topic's name (TopicName).
	GroupID string
	// WorkerID is this worker's id, unique in the cluster. It is the
	// member's client.id, which Members reports.
	WorkerID string
	// SessionTimeout is how long the group waits for a silent member
	// (killed, paused, cut off) before it moves its seat; 0 means
	// DefaultSessionTimeout. The broker bounds it
	// (group.min.session.timeout.ms, 6 s by default, and
	// group.max.session.timeout.ms).
	SessionTimeout time.Duration
	// HeartbeatInterval is how often the member tells the group it lives,
	// and so how soon it learns of a rebalance; 0 means
	// DefaultHeartbeatInterval. It must be below SessionTimeout.
	HeartbeatInterval time.Duration
	// ReplicationFactor creates the cluster topic; 0 means
	// DefaultReplicationFactor, -1 the broker's default.
	ReplicationFactor int
	// Logger receives librdkafka's logs and membership changes; nil
	// discards them.
	Logger *slog.Logger
}

// check validates c and fills in the defaults.
func (c *Config) check() error {
	if c.Kafka.Bootstrap() == "" {
		return errors.New("cluster: no Kafka brokers (Config.Kafka: build it with kclient.FromWorker)")
	}
	if c.GroupID == "" {
		return fmt.Errorf("cluster: worker config: %s is required (the id every worker of one cluster shares)", KeyGroupID)
	}
	if c.WorkerID == "" {
		return errors.New("cluster: no worker id")
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = min(DefaultHeartbeatInterval, c.SessionTimeout/3)
	}
	if c.SessionTimeout < 0 || c.HeartbeatInterval < 0 {
		return fmt.Errorf("cluster: session timeout %s and heartbeat interval %s must be positive", c.SessionTimeout, c.HeartbeatInterval)
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("cluster: heartbeat interval %s must be below the session timeout %s (a third of it is usual)", c.HeartbeatInterval, c.SessionTimeout)
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = DefaultReplicationFactor
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Membership is a worker's seat in its cluster: a member of the consumer
// group GroupID subscribed to the cluster topic. The member that owns the
// topic's only partition is the leader; the group coordinator, not floe,
// decides who that is, and moves it when the leader leaves or falls
// silent for the session timeout.
//
// Leadership is advisory: a paused or cut-off worker can believe it leads
// for up to a session timeout after the group moved on. Whatever a leader
// writes must be fenced where it is written (the config topic's
// transactional writer, the table's committer epoch).
//
// Methods are safe for concurrent use.
type Membership struct {
	cfg   Config
	topic string
	admin *kclient.Admin
	// describer describes the group in a child process (describer.go).
	describer *describer
	consumer  *kafka.Consumer
	errs      kclient.ErrorLog

	leader atomic.Bool
	// joined is closed at the end of the first rebalance.
	joined     chan struct{}
	joinedOnce sync.Once
	changes    chan struct{}
	stop       chan struct{}
	done       chan struct{}

	mu sync.Mutex
	// failed is the error that ended the membership (a fatal client
	// error, a foreign member refused by the group).
	failed error
	// rebalances counts the rebalances seen (assigned or revoked).
	rebalances int
	closeOnce  sync.Once
	closeErr   error
}

// Join creates the cluster topic if it is missing (compacted, one
// partition) and joins the membership group. It returns once this worker
// took part in its first rebalance, so Leader answers for the group as it
// now stands. ctx bounds the join; once joined, the membership lasts until
// Close.
//
// A cluster topic with more than one partition is an error naming the
// topic and the fix. A group.id that an ordinary consumer group uses (its
// members consume other topics, or use another assignor) is a
// *ForeignMembersError naming the group and those members: floe never
// joins it, since its members' rebalances would stall floe's and the other
// way round.
func Join(ctx context.Context, cfg Config) (*Membership, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m := &Membership{
		cfg:     cfg,
		topic:   TopicName(cfg.GroupID),
		joined:  make(chan struct{}),
		changes: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	admin, err := cfg.Kafka.NewAdmin(cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", cfg.GroupID, err)
	}
	m.admin = admin
	m.describer = newDescriber(cfg.Kafka.ConfigMap(), cfg.Logger)
	if err := m.ensureTopic(ctx); err != nil {
		m.describer.Close()
		admin.Close()
		return nil, err
	}
	// Refuse a group an ordinary consumer group uses before joining it:
	// joining would rebalance its consumers.
	if _, err := m.members(ctx); err != nil {
		m.describer.Close()
		admin.Close()
		return nil, err
	}
	cons, err := cfg.Kafka.NewConsumer(cfg.Logger, kafka.ConfigMap{
		"group.id":                      cfg.GroupID,
		"client.id":                     cfg.WorkerID,
		"group.protocol":                "classic",
		"partition.assignment.strategy": assignor,
		"session.timeout.ms":            int(cfg.SessionTimeout.Milliseconds()),
		"heartbeat.interval.ms":         int(cfg.HeartbeatInterval.Milliseconds()),
		// The member never reads: the topic is empty, and no offsets are
		// committed (they would make the group look used).
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"auto.offset.reset":        "latest",
		"enable.partition.eof":     false,
	})
	if err != nil {
		m.describer.Close()
		admin.Close()
		return nil, fmt.Errorf("cluster %q: %w", cfg.GroupID, err)
	}
	m.consumer = cons
	if err := cons.SubscribeTopics([]string{m.topic}, m.rebalance); err != nil {
		_ = cons.Close()
		m.describer.Close()
		admin.Close()
		return nil, fmt.Errorf("cluster %q: subscribe to %q: %w", cfg.GroupID, m.topic, err)
	}
	go m.poll()
	select {
	case <-m.joined:
		cfg.Logger.Info("joined the cluster", "group.id", cfg.GroupID, "worker_id", cfg.WorkerID, "leader", m.Leader())
		return m, nil
	case <-m.done:
		err := m.err()
		if errors.Is(err, errRefused) {
			err = m.foreignOrErr(ctx, err)
		}
		_ = m.Close(context.WithoutCancel(ctx))
		return nil, err
	case <-ctx.Done():
		err := fmt.Errorf("cluster %q: join the group: %w", cfg.GroupID, ctx.Err())
		if r := m.errs.Recent(); r != "" {
			err = fmt.Errorf("%w (client: %s)", err, cfg.Kafka.Redact(r))
		}
		_ = m.Close(context.WithoutCancel(ctx))
		return nil, err
	}
}

// ensureTopic creates or checks the cluster topic.
func (m *Membership) ensureTopic(ctx context.Context) error {
	t, err := m.admin.EnsureTopic(ctx, kclient.TopicSpec{
		Name: m.topic, Key: KeyGroupID, Partitions: 1, ReplicationFactor: m.cfg.ReplicationFactor,
	})
	if err != nil {
		return fmt.Errorf("cluster %q: %w", m.cfg.GroupID, err)
	}
	if t.Partitions != 1 {
		return fmt.Errorf("%w: cluster topic %q (from %s %q) has %d partitions, but it must have exactly one: "+
			"the worker that owns it is the leader, so a second partition would make a second leader. "+
			"Fix: delete the topic (it holds no records; floe recreates it with one partition), or set %s to a new id",
			kclient.ErrBadTopic, m.topic, KeyGroupID, m.cfg.GroupID, t.Partitions, KeyGroupID)
	}
	return nil
}

// poll serves the consumer: rebalance callbacks and error events run on
// this goroutine only.
func (m *Membership) poll() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		switch ev := m.consumer.Poll(100).(type) {
		case kafka.Error:
			m.errs.Note(ev)
			m.cfg.Logger.Debug("cluster membership: client error", "group.id", m.cfg.GroupID, "error", m.cfg.Kafka.Redact(ev.Error()))
			switch {
			case ev.Code() == kafka.ErrInconsistentGroupProtocol:
				// The group runs another assignor: an ordinary consumer
				// group holds the id.
				m.fail(fmt.Errorf("%w (%w)", errRefused, ev))
				return
			case ev.IsFatal():
				m.fail(fmt.Errorf("cluster %q: membership failed: %w", m.cfg.GroupID, ev))
				return
			}
		case *kafka.Message:
			// The topic is never written; nothing to do.
		}
	}
}

// errRefused wraps the group's refusal of this worker: the group runs
// another assignor, so an ordinary consumer group holds the id.
var errRefused = errors.New("the group refused this worker: its members run another partition assignor")

// foreignOrErr explains a refused join: the group's foreign members if
// describing them works, else err itself with the fix.
func (m *Membership) foreignOrErr(ctx context.Context, err error) error {
	_, ferr := m.members(ctx)
	var fe *ForeignMembersError
	if errors.As(ferr, &fe) {
		return fe
	}
	return fmt.Errorf("cluster %q: %w; set %s to an id no consumer group uses", m.cfg.GroupID, err, KeyGroupID)
}

// fail records the error that ends the membership and drops the seat.
func (m *Membership) fail(err error) {
	m.mu.Lock()
	if m.failed == nil {
		m.failed = err
	}
	m.mu.Unlock()
	m.leader.Store(false)
	m.signal()
}

func (m *Membership) err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed == nil {
		return fmt.Errorf("cluster %q: membership ended", m.cfg.GroupID)
	}
	return m.failed
}

// rebalance is the consumer's rebalance callback (cooperative: every call
// carries only what is added or taken away). It runs on the poll
// goroutine, or inside consumer.Close.
func (m *Membership) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	var err error
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		err = c.IncrementalAssign(e.Partitions)
	case kafka.RevokedPartitions:
		if c.AssignmentLost() {
			m.cfg.Logger.Warn("cluster membership lost: the group moved on without this worker (session timeout)", "group.id", m.cfg.GroupID, "worker_id", m.cfg.WorkerID)
		}
		err = c.IncrementalUnassign(e.Partitions)
	default:
		return nil
	}
	if err != nil {
		m.cfg.Logger.Warn("cluster membership: apply the rebalance", "group.id", m.cfg.GroupID, "error", err)
	}
	owned, aerr := c.Assignment()
	lead := aerr == nil && slices.ContainsFunc(owned, func(tp kafka.TopicPartition) bool {
		return tp.Topic != nil && *tp.Topic == m.topic && tp.Partition == 0
	})
	if was := m.leader.Swap(lead); was != lead {
		m.cfg.Logger.Info("cluster leadership changed", "group.id", m.cfg.GroupID, "worker_id", m.cfg.WorkerID, "leader", lead)
	}
	m.mu.Lock()
	m.rebalances++
	m.mu.Unlock()
	if _, ok := ev.(kafka.AssignedPartitions); ok {
		m.joinedOnce.Do(func() { close(m.joined) })
	}
	m.signal()
	return nil
}

// signal wakes a Changes reader without blocking: changes coalesce.
func (m *Membership) signal() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Changes is signalled after every rebalance this worker takes part in
// and whenever Leader may have changed. Signals coalesce: a reader that
// was busy sees one for several changes, so it should re-read Leader and
// Members (level-triggered), never count signals. The channel is never
// closed; after Close or a fatal error Leader stays false and Err says
// why.
func (m *Membership) Changes() <-chan struct{} { return m.changes }

// Leader reports whether this worker owns the cluster topic's partition,
// as of the last rebalance it saw.
func (m *Membership) Leader() bool { return m.leader.Load() }

// WorkerID returns this worker's id.
func (m *Membership) WorkerID() string { return m.cfg.WorkerID }

// Topic returns the cluster topic.
func (m *Membership) Topic() string { return m.topic }

// Err returns the error that ended the membership (a fatal client error, a
// foreign consumer refused by the group), or nil while it lasts.
func (m *Membership) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}

// Members returns the ids of the group's live members (each member's
// client.id, which is its worker id), sorted, as the group coordinator
// sees them now: during a rebalance a member that is leaving may still be
// listed. A member that is not a floe worker (it is assigned partitions
// of other topics, or the group runs another assignor) makes it a
// *ForeignMembersError. ctx bounds the call.
func (m *Membership) Members(ctx context.Context) ([]string, error) {
	return m.members(ctx)
}

func (m *Membership) members(ctx context.Context) ([]string, error) {
	// A fresh cluster has no group coordinator for a while (the offsets
	// topic is still being created), and a dead broker's groups move to
	// another coordinator: ask again until ctx ends.
	backoff := 50 * time.Millisecond
	for {
		d, err := m.describe(ctx)
		var ke kafka.Error
		if errors.As(err, &ke) && ke.Code() == kafka.ErrTimedOut && ctx.Err() == nil {
			// One call waited describeTimeout for a coordinator that
			// did not answer: the next call looks for it again.
			d.Error = ke
			err = nil
		}
		if err != nil {
			return nil, err
		}
		switch code := d.Error.Code(); {
		case code == kafka.ErrNoError:
			return checkMembers(d, m.topic)
		case code == kafka.ErrGroupIDNotFound:
			// No member has joined yet.
			return nil, nil
		case coordinatorNotReady(code):
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("cluster %q: describe the group: the group coordinator is not ready (%s): %w",
					m.cfg.GroupID, code, ctx.Err())
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		default:
			return nil, fmt.Errorf("cluster %q: describe the group: %s: %w", m.cfg.GroupID, code, d.Error)
		}
	}
}

// describeTimeout bounds one DescribeConsumerGroups call. Without it a
// call sent to a coordinator that died waits for the client's 60 s socket
// timeout, and the leader places nothing meanwhile (seen with a Kafka
// node killed under a 3-node cluster).
const describeTimeout = 5 * time.Second

func (m *Membership) describe(ctx context.Context) (kafka.ConsumerGroupDescription, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	d, err := m.describer.describe(ctx, m.cfg.GroupID, describeTimeout)
	if err != nil {
		return d, fmt.Errorf("cluster %q: describe the group: %w", m.cfg.GroupID, m.cfg.Kafka.RedactError(err))
	}
	return d, nil
}

// coordinatorNotReady reports the answers a group coordinator gives while
// it is being elected or loading the group.
func coordinatorNotReady(code kafka.ErrorCode) bool {
	switch code {
	case kafka.ErrCoordinatorNotAvailable, kafka.ErrCoordinatorLoadInProgress, kafka.ErrNotCoordinator, kafka.ErrTimedOut:
		return true
	}
	return false
}

// Close leaves the group at once, so the others rebalance now instead of
// after the session timeout, and releases the clients. ctx bounds the
// wait; the clients finish closing in the background after it ends.
// Close is idempotent.
func (m *Membership) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		closed := make(chan error, 1)
		go func() {
			close(m.stop)
			<-m.done
			// Close revokes the partition (through the callback) and
			// sends LeaveGroup.
			err := m.consumer.Close()
			m.leader.Store(false)
			m.describer.Close()
			m.admin.Close()
			m.signal()
			closed <- err
		}()
		select {
		case err := <-closed:
			if err != nil {
				m.closeErr = fmt.Errorf("cluster %q: leave the group: %w", m.cfg.GroupID, err)
			}
		case <-ctx.Done():
			m.closeErr = fmt.Errorf("cluster %q: leave the group: %w (the client finishes closing in the background)", m.cfg.GroupID, ctx.Err())
		}
	})
	return m.closeErr
}
