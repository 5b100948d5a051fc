package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/plugins/kafka"
	"github.com/floehq/floe/plugins/kafka/kafkatest"
	"github.com/floehq/floe/sdk/sdktest"
)

// kitSchema is the conformance case's value schema.
const kitSchema = `{"type":"record","name":"Event","namespace":"floe.kit","fields":[
	{"name":"id","type":"long"},
	{"name":"name","type":"string"},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"score","type":["null","double"],"default":null}]}`

// kitCase is the kafka source's conformance case against the real broker
// and registry: every check gets a fresh 3-partition topic holding 3000
// records and a fresh consumer group.
func kitCase(t *testing.T) sdktest.SourceCase {
	env := kafkatest.Services(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subjectTopic := kafkatest.UniqueName("kit")
	id, err := kafkatest.Register(ctx, env.RegistryURL, subjectTopic+"-value", kitSchema)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(kitSchema)
	return sdktest.SourceCase{
		Component: "kafka",
		FreshConfig: func(t testing.TB) map[string]string {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			topic := kafkatest.UniqueName("kit")
			if err := kafkatest.CreateTopic(ctx, env.Bootstrap, topic, 3); err != nil {
				t.Fatal(err)
			}
			n, err := kafkatest.Produce(ctx, env.Bootstrap, topic, 3, func(yield func(kafkatest.Record) bool) {
				for i := range 3000 {
					payload, err := avro.Marshal(schema, map[string]any{
						"id": int64(i), "name": fmt.Sprintf("event-%d", i), "tags": []string{"a", "b"}, "score": nil,
					})
					if err != nil {
						panic(err)
					}
					if !yield(kafkatest.Record{Key: fmt.Appendf(nil, "k%d", i%17), Value: kafkatest.Frame(id, payload)}) {
						return
					}
				}
			})
			if err != nil || n != 3000 {
				t.Fatalf("produce: %d of 3000: %v", n, err)
			}
			return map[string]string{
				kafka.KeyTopics:           topic,
				kafka.KeyBootstrapServers: env.Bootstrap,
				kafka.KeyRegistryURL:      env.RegistryURL,
				kafka.KeyConsumerGroupID:  kafkatest.UniqueName("kit"),
				kafka.KeyBatchSize:        "250",
				kafka.KeyBatchLinger:      "20",
			}
		},
		Tasks:           1,
		Records:         1000,
		MaxBatchRecords: 250,
	}
}

// The source kit over real go-plugin gRPC, with the component served from
// this process (so the race detector sees it), against the real broker.
func TestSourceKitInProcess(t *testing.T) {
	sdktest.SourceKit(t, sdktest.InProcess(kafka.Component()), kitCase(t))
}

// The source kit against the built binary, started as floe starts it.
func TestSourceKitBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	c := kitCase(t)
	bin := sdktest.Build(t, "./cmd/floe-plugin-kafka", "kafka")
	sdktest.SourceKit(t, sdktest.Binary(bin), c)
}
