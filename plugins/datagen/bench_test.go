package datagen_test

import (
	"context"
	"testing"

	"github.com/floehq/floe/plugins/datagen"
	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/sdk"
)

// BenchmarkRead measures a task's Read, metadata columns and keys
// included, with each batch released as the plugin protocol does once it
// has encoded it; each op is one record.
//
//	go test -run - -bench Read -cpu 1 ./plugins/datagen/
func BenchmarkRead(b *testing.B) {
	sdkOpen := func(shape string) sdk.SourceOpenRequest {
		return sdk.SourceOpenRequest{
			Task: 0, Tasks: 1, Host: &fakeHost{},
			Config: sdk.NewConfig(map[string]string{datagen.KeyShape: shape}),
		}
	}
	for _, shape := range generate.Shapes() {
		b.Run(shape, func(b *testing.B) {
			st, err := datagen.Component().Source.Open(context.Background(), sdkOpen(shape))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close(context.Background()) }()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			n := 0
			for n < b.N {
				bs, err := st.Read(context.Background(), 1)
				if err != nil {
					b.Fatal(err)
				}
				for _, bt := range bs {
					n += int(bt.Next - bt.From)
					bt.Records.Release()
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
			if used := cpuTime() - cpu0; used > 0 {
				b.ReportMetric(float64(n)/used.Seconds(), "records/cpu-s")
			}
		})
	}
}
