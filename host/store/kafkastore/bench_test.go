package kafkastore

import (
	"context"
	"fmt"
	"testing"

	"github.com/floehq/floe/host/store"
)

// The benchmarks measure one worker's latency against the real broker:
// a config write (a transaction, then the reader applying it), a status
// and an offset write (idempotent producer, then the reader), and a
// ReadToEnd with nothing new (one ListOffsets round trip).

func BenchmarkConfigWrite(b *testing.B) {
	ctx := context.Background()
	c := newCluster(b)
	cs := c.configs(b, "w")
	if _, err := cs.ClaimWrites(ctx, "http://w"); err != nil {
		b.Fatal(err)
	}
	conn := connector("orders", store.TargetRunning)
	for i := 0; b.Loop(); i++ {
		conn.Config["n"] = fmt.Sprint(i)
		if _, err := cs.WriteConnector(ctx, conn); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStatusWrite(b *testing.B) {
	ctx := context.Background()
	s := newCluster(b).statuses(b, "w")
	for i := 0; b.Loop(); i++ {
		if err := s.PutTaskStatus(ctx, "orders", TaskStatus{ID: i % 8, State: "RUNNING", WorkerID: "w", Generation: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOffsetWrite(b *testing.B) {
	ctx := context.Background()
	o := newCluster(b).offsets(b, "w")
	for i := 0; b.Loop(); i++ {
		if err := o.PutCommitted(ctx, "orders", store.Committed{Checkpoint: uint64(i), Positions: map[string]int64{"orders/0": int64(i)}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadToEnd(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"configs", "offsets"} {
		b.Run(kind, func(b *testing.B) {
			c := newCluster(b)
			var read func(context.Context) error
			if kind == "configs" {
				cs := c.configs(b, "w")
				if _, err := cs.ClaimWrites(ctx, "http://w"); err != nil {
					b.Fatal(err)
				}
				read = cs.ReadToEnd
			} else {
				read = c.offsets(b, "w").ReadToEnd
			}
			for b.Loop() {
				if err := read(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
