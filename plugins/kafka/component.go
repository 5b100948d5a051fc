package kafka

import (
	"github.com/floehq/floe/sdk"
)

// Version is the kafka plugin's version.
const Version = "0.1.0"

// Component returns the kafka source component.
func Component() sdk.Component {
	return sdk.Component{
		Name:    "kafka",
		Version: Version,
		Summary: "Reads Kafka topics of Confluent-framed Avro (Schema Registry) as batches, one consumer per task in a cooperative consumer group, with positions from the sink for exactly-once.",
		Spec:    spec(),
		Source:  source{},
	}
}
