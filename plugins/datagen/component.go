package datagen

import (
	"github.com/floehq/floe/sdk"
)

// Version is the datagen plugin's version.
const Version = "0.1.0"

// Component returns the datagen source component.
func Component() sdk.Component {
	return sdk.Component{
		Name:    "datagen",
		Version: Version,
		Summary: "Generates deterministic, realistic Avro records (orders, clickstream or your own schema) at a set rate, for demos, tests and benchmarks.",
		Spec:    spec(),
		Source:  source{},
	}
}
