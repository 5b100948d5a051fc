package runtime

import (
	"context"
	"maps"
	"slices"

	"github.com/floehq/floe/host/dlq"
)

// Topics returns the topics of the partitions seen since the last reset,
// sorted: the part before the last '/' of Kafka-style partition names, the
// whole name otherwise.
func (c *Connector) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Keys(c.topics))
	slices.Sort(out)
	return out
}

// ResetTopics forgets the topics seen (PUT /connectors/{c}/topics/reset).
func (c *Connector) ResetTopics(ctx context.Context) error {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	c.mu.Lock()
	c.topics = map[string]bool{}
	c.mu.Unlock()
	if c.opts.Statuses != nil {
		return c.opts.Statuses.PutTopics(ctx, c.opts.Name, nil)
	}
	return nil
}

// noteTopic records the topic of partition p; new topics are persisted.
func (c *Connector) noteTopic(ctx context.Context, p string) {
	topic, _, _ := dlq.SplitPartition(p)
	c.mu.Lock()
	known := c.topics[topic]
	c.mu.Unlock()
	if known {
		return
	}
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	c.mu.Lock()
	c.topics[topic] = true
	all := slices.Collect(maps.Keys(c.topics))
	c.mu.Unlock()
	if c.opts.Statuses != nil {
		if err := c.opts.Statuses.PutTopics(ctx, c.opts.Name, all); err != nil {
			c.logger.Warn("cannot store the topics seen", "error", err)
		}
	}
}
