package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// sustainStep is one step of the sustainable-rate probe.
type sustainStep struct {
	Target   float64 // records/s asked of the producer
	Produced float64 // records/s the producer reached
	Read     float64 // records/s floe read over the step
	Behind   float64 // seconds of production floe had not read at the step's end
	Held     bool
}

// Probe bounds: each step asks a rate sustainShrink below the last, at
// most sustainSteps times; a step holds when the producer reached
// sustainReach of its target and floe was at most sustainBehind behind
// it at the end.
const (
	sustainSteps  = 7
	sustainShrink = 0.8
	sustainReach  = 0.95
	sustainBehind = 2.0 // seconds of production
)

// sustainedRate finds the rate that the producer and floe sustain
// together on this machine (issue 14: freshness is measured at half of
// it, not at half of floe's rate on a preloaded topic, where floe has
// the machine to itself). One floe run (kafka → hash → iceberg,
// tasks.max=2, 1 s commits) ingests a new topic while the freshness
// producer produces in steps of o.SustainStep, from start down by
// sustainShrink, until a step holds; floe catches up between steps.
func sustainedRate(t *T, env harness.Env, o Options, start float64) (float64, []sustainStep) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	topic := harness.UniqueName("bench_sustain")
	id, g := benchTopic(t, env, o, topic, freshTopicConfig)
	conn := kafkaConnector(env, o, topic, "bench.sustain", 2, time.Second)
	run := StartRun(t, env, o, conn, 200*time.Millisecond)
	defer run.Stop()
	run.WaitRunning(ctx)

	var steps []sustainStep
	var handed int64
	rate := start
	for i := 0; i < sustainSteps; i++ {
		readBefore := run.Metrics.Last().RecordsIn
		pc := &pacer{Gen: g, SchemaID: id, Partitions: int64(o.KafkaPartitions), Rate: rate, For: o.SustainStep}
		t.Logf("sustainable rate: producing at %.0f records/s for %s", rate, o.SustainStep)
		begun := time.Now()
		if _, err := pc.produce(ctx, env.KafkaBootstrap, topic); err != nil {
			t.Fatalf("produce: %v", err)
		}
		took := time.Since(begun).Seconds()
		handed += pc.Handed()
		time.Sleep(time.Second) // the last commit interval's records
		last := run.Metrics.Last()
		s := sustainStep{Target: rate, Produced: float64(pc.Handed()) / took, Read: (last.RecordsIn - readBefore) / (took + 1)}
		s.Behind = (float64(handed) - last.RecordsIn) / s.Produced
		s.Held = s.Produced >= sustainReach*rate && s.Behind <= sustainBehind
		steps = append(steps, s)
		t.Logf("sustainable rate: asked %.0f, produced %.0f, floe read %.0f records/s, %.1f s behind at the end: held %v",
			s.Target, s.Produced, s.Read, s.Behind, s.Held)
		if s.Held {
			return rate, steps
		}
		run.F.WaitFor(ctx, "floe caught up with the probe's producer", func(context.Context) (bool, string, error) {
			in := run.Metrics.Last().RecordsIn
			return in >= float64(handed), fmt.Sprintf("read %.0f of %d", in, handed), nil
		})
		rate *= sustainShrink
	}
	last := steps[len(steps)-1]
	return last.Target, steps
}
