package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/host/dlq"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
)

// Keys of Connect's offsets document as floe fills it.
const (
	offsetKafkaTopic     = "kafka_topic"
	offsetKafkaPartition = "kafka_partition"
	offsetKafkaOffset    = "kafka_offset"
	offsetPartition      = "partition"
	offsetPosition       = "position"
)

// Offsets implements [API]: the positions the sink holds (its frontier),
// in Kafka's shape when the source reads Kafka (see [Worker.kafkaShaped]).
// A running connector answers from its last commit (or, while it starts,
// from the offsets stored after the last commit); a stopped one with a
// pending override (PATCH/DELETE offsets) answers with the override, as
// that is where it will resume; otherwise the sink plugin is started to
// read the table's frontier (falling back to the offsets stored after the
// last commit when it cannot start).
func (w *Worker) Offsets(ctx context.Context, name string) ([]Offset, error) {
	c, err := w.get(name)
	if err != nil {
		return nil, err
	}
	toOffsets := func(pos map[string]int64) []Offset { return renderOffsets(pos, w.kafkaShaped(c)) }
	_, _, rt, _, _ := c.snapshot()
	if rt != nil {
		if pos, _, ok := rt.Offsets(); ok {
			return toOffsets(pos), nil
		}
		// Starting: the sink's frontier is not read yet. Answer with the
		// last commit floe stored rather than start a second sink.
		cm, err := w.offsets.Committed(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return toOffsets(cm.Positions), nil
	}
	if ov, err := w.offsets.Override(ctx, name); err == nil {
		return toOffsets(ov.Positions), nil
	}
	fr, ferr := runtime.ReadFrontier(ctx, w.runtimeOptions(c, false))
	if ferr == nil {
		return toOffsets(fr.Positions), nil
	}
	cm, err := w.offsets.Committed(ctx, name)
	if err == nil {
		w.logger.Warn("cannot read the sink's frontier; answering with the offsets of the last commit", "connector", name, "error", ferr)
		return toOffsets(cm.Positions), nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, ferr
	}
	return nil, errors.Join(ferr, err)
}

// kafkaSource is the built-in Kafka source component.
const kafkaSource = "kafka"

// kafkaShaped reports whether the connector's partition names are Kafka
// topic partitions ("orders/3"), which Connect's offsets document shows as
// kafka_topic, kafka_partition and kafka_offset: its source is the kafka
// component, or a source that declares kafka.bootstrap.servers (a Kafka
// source under another name says so by its spec). Other sources' names
// only look alike (datagen's "orders/0"); they show as partition and
// position.
func (w *Worker) kafkaShaped(c *conn) bool {
	c.mu.Lock()
	name := c.comps[sdk.KindSource].Name
	if name == "" {
		name = strings.TrimSpace(c.config[runtime.KeySource])
	}
	c.mu.Unlock()
	if name == kafkaSource {
		return true
	}
	comp, ok := findComponent(w.plugins.Components(), sdk.KindSource, name)
	if !ok {
		return false
	}
	if comp.Name == kafkaSource {
		return true
	}
	for _, f := range comp.Fields {
		if f.Name == dlq.KeyKafkaBootstrap && !f.Prefix {
			return true
		}
	}
	return false
}

// renderOffsets renders positions as Connect's offsets document, sorted:
// with kafka, {kafka_topic, kafka_partition} and {kafka_offset} for names
// of the form "topic/N"; otherwise (and for other names) {partition} and
// {position}.
func renderOffsets(pos map[string]int64, kafka bool) []Offset {
	names := slices.Collect(maps.Keys(pos))
	slices.SortFunc(names, comparePartitions)
	out := make([]Offset, 0, len(names))
	for _, p := range names {
		if topic, part, ok := dlq.SplitPartition(p); ok && kafka {
			out = append(out, Offset{
				Partition: map[string]any{offsetKafkaTopic: topic, offsetKafkaPartition: part},
				Offset:    map[string]any{offsetKafkaOffset: pos[p]},
			})
			continue
		}
		out = append(out, Offset{
			Partition: map[string]any{offsetPartition: p},
			Offset:    map[string]any{offsetPosition: pos[p]},
		})
	}
	return out
}

// comparePartitions orders "t/2" before "t/10".
func comparePartitions(a, b string) int {
	ta, pa, oka := dlq.SplitPartition(a)
	tb, pb, okb := dlq.SplitPartition(b)
	if oka && okb && ta == tb {
		return int(pa) - int(pb)
	}
	return strings.Compare(a, b)
}

// AlterOffsets implements [API] (PATCH offsets): the connector must be
// STOPPED. The new positions are laid over the table's frontier (or over
// an override not yet committed) and stored as an override: the next
// start resumes there, and its first commit tells the sink to replace its
// frontier (sdk.OffsetsReset in the sink's Open). An offset of null
// removes the partition's position: the source then starts it where it
// decides.
func (w *Worker) AlterOffsets(ctx context.Context, name string, offsets []Offset) error {
	changes, err := parseOffsets(offsets)
	if err != nil {
		return err
	}
	return w.overrideOffsets(ctx, name, false, func(base map[string]int64) map[string]int64 {
		for p, v := range changes {
			if v == nil {
				delete(base, p)
			} else {
				base[p] = *v
			}
		}
		return base
	})
}

// ResetOffsets implements [API] (DELETE offsets): the connector must be
// STOPPED; it then starts every partition over where the source decides
// (earliest or latest), and its first commit replaces the sink's frontier.
func (w *Worker) ResetOffsets(ctx context.Context, name string) error {
	return w.overrideOffsets(ctx, name, true, func(map[string]int64) map[string]int64 { return map[string]int64{} })
}

func (w *Worker) overrideOffsets(ctx context.Context, name string, reset bool, apply func(map[string]int64) map[string]int64) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	if err := c.lockOp(ctx); err != nil {
		return err
	}
	defer c.op.unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	_, target, rt, _, _ := c.snapshot()
	if target != store.TargetStopped || rt != nil {
		state := target
		if target == store.TargetStopped {
			state = "stopping"
		}
		return fmt.Errorf("connector %s is %s; offsets can only be changed while it is STOPPED (PUT /connectors/%s/stop first): %w", name, state, name, ErrBadState)
	}
	fr, err := runtime.ReadFrontier(ctx, w.runtimeOptions(c, false))
	if err != nil {
		return fmt.Errorf("connector %s: the offsets were not changed, the table's frontier could not be read: %w", name, err)
	}
	base, after := maps.Clone(fr.Positions), fr.Checkpoint
	if ov, err := w.offsets.Override(ctx, name); err == nil && fr.Checkpoint <= ov.AfterCheckpoint {
		base, after = maps.Clone(ov.Positions), ov.AfterCheckpoint
	}
	if base == nil {
		base = map[string]int64{}
	}
	ov := store.Override{Positions: apply(base), AfterCheckpoint: after, Reset: reset, Created: time.Now().UTC()}
	if err := w.offsets.PutOverride(ctx, name, ov); err != nil {
		return fmt.Errorf("connector %s: %w", name, err)
	}
	w.logger.Info("connector offsets changed; applied on the next start", "connector", name, "reset", reset, "partitions", len(ov.Positions))
	return nil
}

// parseOffsets reads Connect's offsets entries into partition names and
// positions (nil: remove the position).
func parseOffsets(offsets []Offset) (map[string]*int64, error) {
	out := map[string]*int64{}
	for i, o := range offsets {
		p, err := partitionName(o.Partition)
		if err != nil {
			return nil, offsetsError(i, err)
		}
		if o.Offset == nil {
			out[p] = nil
			continue
		}
		raw, ok := o.Offset[offsetKafkaOffset]
		if !ok {
			raw, ok = o.Offset[offsetPosition]
		}
		if !ok {
			return nil, offsetsError(i, fmt.Errorf("the offset needs %q (or %q), got %v", offsetKafkaOffset, offsetPosition, o.Offset))
		}
		n, err := asInt(raw)
		if err != nil || n < 0 {
			return nil, offsetsError(i, fmt.Errorf("offset %v of %s is not a position (a non-negative integer)", raw, p))
		}
		out[p] = &n
	}
	return out, nil
}

func partitionName(m map[string]any) (string, error) {
	if t, ok := m[offsetKafkaTopic]; ok {
		topic, ok := t.(string)
		if !ok || topic == "" {
			return "", fmt.Errorf("%s must be a topic name, got %v", offsetKafkaTopic, t)
		}
		n, err := asInt(m[offsetKafkaPartition])
		if err != nil || n < 0 {
			return "", fmt.Errorf("%s must be a partition number, got %v", offsetKafkaPartition, m[offsetKafkaPartition])
		}
		return topic + "/" + strconv.FormatInt(n, 10), nil
	}
	if p, ok := m[offsetPartition].(string); ok && p != "" {
		return p, nil
	}
	return "", fmt.Errorf("the partition needs %q and %q (Kafka) or %q, got %v", offsetKafkaTopic, offsetKafkaPartition, offsetPartition, m)
}

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("%v is not an integer", x)
		}
		return int64(x), nil
	case string:
		return strconv.ParseInt(strings.TrimSpace(x), 10, 64)
	case interface{ Int64() (int64, error) }: // json.Number
		return x.Int64()
	}
	return 0, fmt.Errorf("%v is not an integer", v)
}

func offsetsError(i int, err error) error {
	return validationError("offsets", "", fmt.Sprintf("offsets[%d]: %v", i, err))
}
