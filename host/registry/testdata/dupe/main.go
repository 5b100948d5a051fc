// Command dupe is a test plugin whose source takes a name alpha already has.
package main

import (
	"context"
	"errors"

	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(
		sdk.Component{Name: "alpha", Summary: "a second alpha source", Source: source{}},
		sdk.Component{Name: "gamma", Summary: "a partitioner", Partitioner: partitioner{}},
	)
}

type source struct{}

func (source) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return nil, errors.New("dupe: not for running")
}

type partitioner struct{}

func (partitioner) Open(context.Context, sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	return nil, errors.New("dupe: not for running")
}
