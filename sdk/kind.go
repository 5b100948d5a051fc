package sdk

// Kind is one of the four plugin kinds.
type Kind string

// The plugin kinds.
const (
	KindSource      Kind = "source"
	KindPartitioner Kind = "partitioner"
	KindSink        Kind = "sink"
	KindMaintenance Kind = "maintenance"
)

// AllKinds lists every kind, in pipeline order.
func AllKinds() []Kind {
	return []Kind{KindSource, KindPartitioner, KindSink, KindMaintenance}
}
