// Package cluster holds the membership and assignment of distributed
// mode: a worker's seat in the cluster (Membership, a plain
// librdkafka consumer group on a one-partition cluster topic whose owner
// is the leader, since librdkafka cannot host a custom group protocol),
// and the leader's pure, deterministic Assign (sticky, balanced,
// incremental with a two-phase revoke, one committer per connector with
// an epoch that only grows). The herder (package distributed) drives
// them; floe standalone does not use this package.
package cluster
