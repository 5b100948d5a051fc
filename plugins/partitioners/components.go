package partitioners

import "github.com/floehq/floe/sdk"

// Version is the version of the partitioner components.
const Version = "0.1.0"

// Components returns the hash, roundrobin and skew-aware partitioners, for
// sdk.Serve (the floe-plugin-partitioners binary) or for a binary of your
// own that offers them next to other components.
func Components() []sdk.Component {
	return []sdk.Component{
		{
			Name:    "hash",
			Version: Version,
			Summary: "Each record to the writer its key hashes to: by default the sink table's partition values, " +
				"so each table partition is written by one writer and makes few files.",
			Spec:         sdk.NewSpec(append([]*sdk.Field{fieldsField()}, sinkFields()...)...),
			Capabilities: []sdk.Capability{sdk.CapabilityLoad},
			Partitioner:  hashPartitioner{},
		},
		{
			Name:    "roundrobin",
			Aliases: []string{"round-robin", "shuffle"},
			Version: Version,
			Summary: "Records spread evenly over the writers in contiguous runs, whatever their key " +
				"(Flink's shuffle); every writer writes every partition.",
			Spec:         sdk.NewSpec(),
			Capabilities: []sdk.Capability{sdk.CapabilityLoad},
			Partitioner:  roundRobin{},
		},
		{
			Name:    "skew-aware",
			Aliases: []string{"skew"},
			Version: Version,
			Summary: "Like hash, but keys that carry a large share of the load are spread over several writers, " +
				"so no writer idles while one drowns.",
			Spec:         skewSpec(),
			Capabilities: []sdk.Capability{sdk.CapabilityLoad},
			Partitioner:  skewAware{},
		},
	}
}
