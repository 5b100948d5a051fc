package datagen_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/floehq/floe/plugins/datagen"
	"github.com/floehq/floe/sdk"
)

// A datagen task of a bounded run: 10 000 clickstream records over two
// partitions, read to the end. floe's host does this over gRPC; here a
// minimal host answers the task in-process.
func Example() {
	task, err := datagen.Component().Source.Open(context.Background(), sdk.SourceOpenRequest{
		Connector: "demo",
		Task:      0,
		Tasks:     1,
		Config: sdk.NewConfig(map[string]string{
			"datagen.shape":      "clickstream",
			"datagen.count":      "10000",
			"datagen.partitions": "2",
			"datagen.batch.size": "2000",
		}),
		Host: &fakeHost{},
	})
	if err != nil {
		panic(err)
	}
	defer func() { _ = task.Close(context.Background()) }()
	for {
		batches, err := task.Read(context.Background(), 4)
		for _, b := range batches {
			fmt.Printf("%s [%d, %d) %d columns\n", b.Partition, b.From, b.Next, b.Records.NumCols())
			b.Records.Release()
		}
		if errors.Is(err, sdk.ErrEndOfInput) {
			break
		}
		if err != nil {
			panic(err)
		}
	}
	// Output:
	// clickstream/0 [0, 2000) 16 columns
	// clickstream/1 [0, 2000) 16 columns
	// clickstream/0 [2000, 4000) 16 columns
	// clickstream/1 [2000, 4000) 16 columns
	// clickstream/0 [4000, 5000) 16 columns
	// clickstream/1 [4000, 5000) 16 columns
}
