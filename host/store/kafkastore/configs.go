package kafkastore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/host/store"
)

// Keys of the config topic. A connector's records are the prefix plus its
// name; the cluster's own records have fixed keys no connector key can
// equal (every connector key has a prefix).
const (
	PrefixConnector   = "connector-"
	PrefixTargetState = "target-state-"
	PrefixRestart     = "restart-"
	KeyLeader         = "floe-leader"
	KeyAssignment     = "floe-assignment"
)

// connectorRecord is a connector-<name> record.
type connectorRecord struct {
	Config  map[string]string `json:"config"`
	Created time.Time         `json:"created"`
	Updated time.Time         `json:"updated"`
}

// targetRecord is a target-state-<name> record.
type targetRecord struct {
	State   store.TargetState `json:"state"`
	Updated time.Time         `json:"updated"`
}

// Restart is a restart request (POST /connectors/{c}/restart), a
// restart-<name> record until the leader handles it and deletes it.
type Restart struct {
	// ID tells two requests for one connector apart.
	ID           string    `json:"id"`
	IncludeTasks bool      `json:"include_tasks"`
	OnlyFailed   bool      `json:"only_failed"`
	Requested    time.Time `json:"requested"`
}

// Leader is the floe-leader record: who writes the config topic.
type Leader struct {
	// Epoch grows by one with every ClaimWrites; readers ignore config
	// records stamped with an epoch below the newest Leader's.
	Epoch    int64     `json:"epoch"`
	WorkerID string    `json:"worker_id"`
	URL      string    `json:"url"`
	Claimed  time.Time `json:"claimed"`
}

// Assignment is the floe-assignment record: the leader's assignor output,
// which this package stores without reading it.
type Assignment struct {
	// Epoch is the assignment's generation.
	Epoch int64 `json:"epoch"`
	// ConfigOffset is the config offset (Configs.Offset) it was computed
	// at.
	ConfigOffset int64 `json:"config_offset"`
	// Data is the assignor's JSON.
	Data    json.RawMessage `json:"data"`
	Updated time.Time       `json:"updated"`
}

// ConfigSnapshot is the config topic's state at one offset.
type ConfigSnapshot struct {
	// Offset is the config offset: every record below it is applied.
	Offset int64
	// Connectors holds each connector's config and target state.
	Connectors map[string]store.Connector
	// Restarts holds the pending restart requests by connector name.
	Restarts map[string]Restart
	// Leader and Assignment are nil until written.
	Leader     *Leader
	Assignment *Assignment
}

// Configs is the config store on config.storage.topic: connector configs,
// target states, restart requests, and the cluster's floe-leader and
// floe-assignment records. It implements [store.ConfigStore].
//
// # One writer
//
// Writes go through a transactional producer with the fixed
// transactional.id floe-<group.id>-leader, so one worker writes at a time:
// [Configs.ClaimWrites] fences every earlier writer (its next write fails
// with ErrFenced and is never visible: its open transaction is aborted)
// and writes a floe-leader record with the next leader epoch. Readers read
// read_committed. Every write returns the offset of its (last) record and
// returns once this store's reader applied it.
//
// # Zombie leaders
//
// Every record carries the epoch of the leader that wrote it. A reader
// ignores a record whose epoch is below the newest floe-leader record it
// has applied, in log order: a worker that wrote with an old epoch after a
// newer leader claimed (through a producer the claim did not fence, such
// as one with another transactional.id) changes nothing, and its write
// fails with ErrFenced. The fencing of the transactional.id makes this
// rare; the epoch makes it harmless. Since compaction keeps only a key's
// newest record, an ignored record would outlive the valid one; the next
// write of the leader (ClaimWrites included) therefore rewrites every key
// whose newest record was ignored.
//
// # Reads
//
// The [store.ConfigStore] getters read the topic to its end first (ctx
// bounds it). [Configs.Snapshot] answers from what is applied, without
// I/O, with the offset it reflects.
type Configs struct {
	t        *Table
	workerID string
	mu       sync.Mutex
	// epoch is the claimed leader epoch; 0 means no live claim.
	epoch int64
}

var _ store.ConfigStore = (*Configs)(nil)

// TransactionalID returns the config store's transactional.id for a
// cluster.
func TransactionalID(groupID string) string { return "floe-" + groupID + "-leader" }

// OpenConfigs creates config.storage.topic if missing (one partition,
// compacted) or validates it, and reads it to its end; ctx bounds it.
func OpenConfigs(ctx context.Context, s Settings, opts Options) (*Configs, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	admit := func(next Record, get func(string) (Record, bool)) bool {
		if admitConfig(next, get) {
			return true
		}
		cur, _ := get(KeyLeader)
		logger.Warn("ignored a config record of an old leader epoch (a zombie leader wrote it)", "topic", s.ConfigTopic.Name,
			"key", next.Key, "offset", next.Offset, "epoch", next.Epoch, "leader_epoch", cur.Epoch)
		return false
	}
	t, err := openTable(ctx, s, s.ConfigTopic, opts, TableConfig{
		TransactionalID: TransactionalID(s.GroupID),
		Admit:           admit,
		RepairShadowed:  true,
	})
	if err != nil {
		return nil, err
	}
	return &Configs{t: t, workerID: opts.WorkerID}, nil
}

// admitConfig is the zombie-leader rule: a record from an epoch below the
// newest leader's is ignored.
func admitConfig(next Record, get func(string) (Record, bool)) bool {
	if cur, ok := get(KeyLeader); ok && next.Epoch < cur.Epoch {
		return false
	}
	return true
}

// Table returns the store's table (for Offsets, WaitFor and tests).
func (c *Configs) Table() *Table { return c.t }

// Close closes the store's clients.
func (c *Configs) Close() { c.t.Close() }

// ReadToEnd reads the topic to its end (see Table.ReadToEnd).
func (c *Configs) ReadToEnd(ctx context.Context) error { return c.t.ReadToEnd(ctx) }

// Offset is the config offset: every record below it is applied. After a
// write it is past the write's offset; after ReadToEnd it is at least the
// end the call observed. Two workers that both read to the end agree on
// it; a transaction's commit marker counts, so a worker that only waited
// for a record may be one behind one that read to the end.
func (c *Configs) Offset() int64 { return c.t.Offsets()[0] }

// WaitForOffset returns once the reader applied the record at offset (an
// offset a write returned, on this or another worker).
func (c *Configs) WaitForOffset(ctx context.Context, offset int64) error {
	return c.t.WaitFor(ctx, Position{Partition: 0, Offset: offset})
}

// ClaimWrites makes this worker the config topic's writer: it fences
// every earlier writer (see Configs), reads to the end, and writes a
// floe-leader record with the next epoch, this worker's id and url. It
// returns that record. Call it when this worker becomes the leader, and
// again after a write failed with ErrNotClaimed; a write that failed with
// ErrFenced means another worker claimed since, so claim again only if
// this worker is still the leader (a claim fences whoever writes now).
func (c *Configs) ClaimWrites(ctx context.Context, url string) (Leader, error) {
	c.mu.Lock()
	c.epoch = 0
	c.mu.Unlock()
	if err := c.t.Claim(ctx); err != nil {
		return Leader{}, err
	}
	if err := c.t.ReadToEnd(ctx); err != nil {
		return Leader{}, err
	}
	cur, _ := c.Leader()
	l := Leader{Epoch: cur.Epoch + 1, WorkerID: c.workerID, URL: url, Claimed: time.Now().UTC()}
	if _, err := c.t.Write(ctx, Mutation{Key: KeyLeader, Value: l, Epoch: l.Epoch}); err != nil {
		return Leader{}, c.fenced(err, l.Epoch)
	}
	c.mu.Lock()
	c.epoch = l.Epoch
	c.mu.Unlock()
	return l, nil
}

// Epoch returns the leader epoch this store writes with, 0 without a
// live claim.
func (c *Configs) Epoch() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// write writes muts stamped with the claimed epoch and returns the last
// record's offset.
func (c *Configs) write(ctx context.Context, muts ...Mutation) (int64, error) {
	epoch := c.Epoch()
	if epoch == 0 {
		return 0, fmt.Errorf("kafkastore: config topic %q: %w: this worker is not the leader (ClaimWrites first; other workers forward writes to the leader)", c.t.cfg.Topic, ErrNotClaimed)
	}
	for i := range muts {
		muts[i].Epoch = epoch
	}
	pos, err := c.t.Write(ctx, muts...)
	if err != nil {
		return 0, c.fenced(err, epoch)
	}
	var off int64
	for _, p := range pos {
		off = max(off, p.Offset)
	}
	return off, nil
}

// fenced drops the claim after a write that shows it is gone, and words a
// rejected write as fenced.
func (c *Configs) fenced(err error, epoch int64) error {
	if errors.Is(err, ErrFenced) || errors.Is(err, ErrNotClaimed) || errors.Is(err, ErrRejected) {
		c.mu.Lock()
		if c.epoch == epoch {
			c.epoch = 0
		}
		c.mu.Unlock()
	}
	if errors.Is(err, ErrRejected) && !errors.Is(err, ErrFenced) {
		newer, _ := c.Leader()
		return fmt.Errorf("%w: leader epoch %d is older than the newest leader's (%d, worker %q): %w", ErrFenced, epoch, newer.Epoch, newer.WorkerID, err)
	}
	return err
}

// WriteConnector writes the connector's config and, when c.Target is
// set, its target state, in one transaction; it returns the offset.
func (c *Configs) WriteConnector(ctx context.Context, conn store.Connector) (int64, error) {
	if conn.Name == "" {
		return 0, errors.New("kafkastore: connector without a name")
	}
	muts := []Mutation{{Key: PrefixConnector + conn.Name, Value: connectorRecord{Config: conn.Config, Created: conn.Created, Updated: conn.Updated}}}
	if conn.Target != "" {
		if err := checkTarget(conn.Target); err != nil {
			return 0, err
		}
		muts = append(muts, Mutation{Key: PrefixTargetState + conn.Name, Value: targetRecord{State: conn.Target, Updated: conn.Updated}})
	}
	return c.write(ctx, muts...)
}

func checkTarget(s store.TargetState) error {
	switch s {
	case store.TargetRunning, store.TargetPaused, store.TargetStopped:
		return nil
	}
	return fmt.Errorf("kafkastore: target state %q is not RUNNING, PAUSED or STOPPED", s)
}

// WriteTargetState writes a connector's target state (which may come
// before its config, as Connect's initial_state does).
func (c *Configs) WriteTargetState(ctx context.Context, name string, s store.TargetState) (int64, error) {
	if err := checkTarget(s); err != nil {
		return 0, err
	}
	return c.write(ctx, Mutation{Key: PrefixTargetState + name, Value: targetRecord{State: s, Updated: time.Now().UTC()}})
}

// WriteRestart records a restart request for the connector.
func (c *Configs) WriteRestart(ctx context.Context, name string, r Restart) (int64, error) {
	if r.Requested.IsZero() {
		r.Requested = time.Now().UTC()
	}
	return c.write(ctx, Mutation{Key: PrefixRestart + name, Value: r})
}

// WriteRestartDone deletes the connector's restart request.
func (c *Configs) WriteRestartDone(ctx context.Context, name string) (int64, error) {
	return c.write(ctx, Mutation{Key: PrefixRestart + name})
}

// WriteAssignment writes the floe-assignment record.
func (c *Configs) WriteAssignment(ctx context.Context, a Assignment) (int64, error) {
	if len(a.Data) == 0 {
		a.Data = json.RawMessage("null")
	}
	if a.Updated.IsZero() {
		a.Updated = time.Now().UTC()
	}
	return c.write(ctx, Mutation{Key: KeyAssignment, Value: a})
}

// WriteDeletion deletes the connector's config, target state and restart
// request in one transaction.
func (c *Configs) WriteDeletion(ctx context.Context, name string) (int64, error) {
	return c.write(ctx, Mutation{Key: PrefixConnector + name}, Mutation{Key: PrefixTargetState + name}, Mutation{Key: PrefixRestart + name})
}

// PutConnector implements [store.ConfigStore] (WriteConnector).
func (c *Configs) PutConnector(ctx context.Context, conn store.Connector) error {
	_, err := c.WriteConnector(ctx, conn)
	return err
}

// DeleteConnector implements [store.ConfigStore] (WriteDeletion).
func (c *Configs) DeleteConnector(ctx context.Context, name string) error {
	_, err := c.WriteDeletion(ctx, name)
	return err
}

// Connector implements [store.ConfigStore]: it reads to the end first.
func (c *Configs) Connector(ctx context.Context, name string) (store.Connector, error) {
	if err := c.t.ReadToEnd(ctx); err != nil {
		return store.Connector{}, err
	}
	var (
		conn store.Connector
		err  error
	)
	c.t.View(func(get func(string) (Record, bool), _ func(string) []Record, _ map[int32]int64) {
		r, ok := get(PrefixConnector + name)
		if !ok {
			err = fmt.Errorf("connector %q: %w", name, store.ErrNotFound)
			return
		}
		conn, err = c.connector(name, r, get)
	})
	return conn, err
}

// Connectors implements [store.ConfigStore]: it reads to the end first.
func (c *Configs) Connectors(ctx context.Context) ([]store.Connector, error) {
	if err := c.t.ReadToEnd(ctx); err != nil {
		return nil, err
	}
	var (
		out []store.Connector
		err error
	)
	c.t.View(func(get func(string) (Record, bool), scan func(string) []Record, _ map[int32]int64) {
		for _, r := range scan(PrefixConnector) {
			conn, e := c.connector(strings.TrimPrefix(r.Key, PrefixConnector), r, get)
			if e != nil {
				err = e
				return
			}
			out = append(out, conn)
		}
	})
	return out, err
}

// connector builds a connector from its records; the table is locked.
func (c *Configs) connector(name string, r Record, get func(string) (Record, bool)) (store.Connector, error) {
	var cr connectorRecord
	if err := c.decode(r, &cr); err != nil {
		return store.Connector{}, err
	}
	conn := store.Connector{Name: name, Config: cr.Config, Target: store.TargetRunning, Created: cr.Created, Updated: cr.Updated}
	if tr, ok := get(PrefixTargetState + name); ok {
		var t targetRecord
		if err := c.decode(tr, &t); err != nil {
			return store.Connector{}, err
		}
		conn.Target = t.State
	}
	return conn, nil
}

// decode reads a record's data into v; an error names the record.
func (c *Configs) decode(r Record, v any) error {
	return decodeData(c.t, r, v)
}

// decodeData reads a record's data into v; an error names the topic and
// the record.
func decodeData(t *Table, r Record, v any) error {
	if err := json.Unmarshal(r.Data, v); err != nil {
		return fmt.Errorf("kafkastore: topic %q (%s): record %q at partition %d offset %d does not decode: %w", t.cfg.Topic, t.cfg.TopicKey, r.Key, r.Partition, r.Offset, err)
	}
	return nil
}

// Leader returns the applied floe-leader record, without I/O.
func (c *Configs) Leader() (Leader, bool) {
	r, ok := c.t.Get(KeyLeader)
	if !ok {
		return Leader{}, false
	}
	var l Leader
	if err := c.decode(r, &l); err != nil {
		return Leader{}, false
	}
	return l, true
}

// Snapshot returns the applied state, without I/O: call ReadToEnd (or
// WaitForOffset) first for a fresh one. Records that do not decode are
// left out (Connector and Connectors report them).
func (c *Configs) Snapshot() ConfigSnapshot {
	snap := ConfigSnapshot{Connectors: map[string]store.Connector{}, Restarts: map[string]Restart{}}
	c.t.View(func(get func(string) (Record, bool), scan func(string) []Record, offsets map[int32]int64) {
		snap.Offset = offsets[0]
		for _, r := range scan(PrefixConnector) {
			name := strings.TrimPrefix(r.Key, PrefixConnector)
			if conn, err := c.connector(name, r, get); err == nil {
				snap.Connectors[name] = conn
			}
		}
		for _, r := range scan(PrefixRestart) {
			var rs Restart
			if c.decode(r, &rs) == nil {
				snap.Restarts[strings.TrimPrefix(r.Key, PrefixRestart)] = rs
			}
		}
		if r, ok := get(KeyLeader); ok {
			var l Leader
			if c.decode(r, &l) == nil {
				snap.Leader = &l
			}
		}
		if r, ok := get(KeyAssignment); ok {
			var a Assignment
			if c.decode(r, &a) == nil {
				snap.Assignment = &a
			}
		}
	})
	return snap
}
