// Command alpha is a test plugin with a source and a sink of the same name.
package main

import (
	"context"
	"errors"

	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(
		sdk.Component{Name: "alpha", Aliases: []string{"org.example.AlphaSource"}, Version: "1.2.3", Summary: "alpha source",
			Spec: sdk.NewSpec(sdk.Int("alpha.rows").Default("10")), Source: source{}},
		sdk.Component{Name: "alpha", Version: "1.2.3", Summary: "alpha sink", Sink: sink{}},
	)
}

type source struct{}

func (source) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return nil, errors.New("alpha: not for running")
}

type sink struct{}

func (sink) Open(context.Context, sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	return nil, errors.New("alpha: not for running")
}
