// Command beta is a test plugin with one source.
package main

import (
	"context"
	"errors"

	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(sdk.Component{Name: "beta", Version: "0.1.0", Summary: "beta source", Source: source{}})
}

type source struct{}

func (source) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return nil, errors.New("beta: not for running")
}
