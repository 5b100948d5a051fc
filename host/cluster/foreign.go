package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// ForeignMember is a member of the membership group that is not a floe
// worker.
type ForeignMember struct {
	// ClientID and Host are what the group coordinator reports.
	ClientID string
	Host     string
	// Why says how it shows: the topics it is assigned, or the group's
	// protocol.
	Why string
}

// ForeignMembersError is returned by Join and Members when the group.id
// is used by an ordinary consumer group: members that consume other
// topics, or a group running another assignor or the KIP-848 consumer
// protocol. floe workers never join such a group: each rebalance would
// stop the other consumers too, and their partitions would be assigned to
// floe workers that never read them.
type ForeignMembersError struct {
	GroupID string
	Members []ForeignMember
}

func (e *ForeignMembersError) Error() string {
	parts := make([]string, 0, len(e.Members))
	for _, f := range e.Members {
		parts = append(parts, fmt.Sprintf("%q at %s (%s)", f.ClientID, f.Host, f.Why))
	}
	return fmt.Sprintf("cluster: %s %q is already used by a consumer group that is not a floe cluster; its members %s. "+
		"A floe cluster needs a group.id of its own (Kafka Connect's rule too): set %s to an id no consumer uses",
		KeyGroupID, e.GroupID, strings.Join(parts, ", "), KeyGroupID)
}

// checkMembers returns the worker ids of a described group, or a
// *ForeignMembersError if a member is not a floe worker. A floe worker is
// assigned nothing but the cluster topic's partition, in a classic group
// running the cooperative-sticky assignor. (Kafka keeps no subscription in
// a classic group's description, so an idle consumer of the same assignor
// that holds no partition cannot be told apart; it is listed as a worker.)
func checkMembers(d kafka.ConsumerGroupDescription, topic string) ([]string, error) {
	var ids []string
	var foreign []ForeignMember
	wholeGroup := ""
	switch {
	case d.Type == kafka.ConsumerGroupTypeConsumer:
		wholeGroup = "the group uses the KIP-848 consumer protocol; floe workers use the classic one"
	case d.PartitionAssignor != "" && d.PartitionAssignor != assignor:
		wholeGroup = fmt.Sprintf("the group runs the %s assignor; floe workers run %s", d.PartitionAssignor, assignor)
	}
	for _, mem := range d.Members {
		var other []string
		for _, tp := range mem.Assignment.TopicPartitions {
			if tp.Topic != nil && *tp.Topic != topic && !slices.Contains(other, *tp.Topic) {
				other = append(other, *tp.Topic)
			}
		}
		switch {
		case len(other) > 0:
			slices.Sort(other)
			foreign = append(foreign, ForeignMember{ClientID: mem.ClientID, Host: mem.Host, Why: "consumes " + strings.Join(other, ", ")})
		case wholeGroup != "":
			foreign = append(foreign, ForeignMember{ClientID: mem.ClientID, Host: mem.Host, Why: wholeGroup})
		default:
			ids = append(ids, mem.ClientID)
		}
	}
	if len(foreign) > 0 {
		slices.SortFunc(foreign, func(a, b ForeignMember) int { return strings.Compare(a.ClientID+a.Host, b.ClientID+b.Host) })
		return nil, &ForeignMembersError{GroupID: d.GroupID, Members: foreign}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
