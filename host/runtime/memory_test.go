package runtime

import (
	"slices"
	"strconv"
	"testing"

	"github.com/floehq/floe/sdk"
)

// TestMemoryShares: a connector's share is divided among its processes by
// weight, adds up to at most the share, gives a process the config sized
// keeps that, and sets each process's GOMEMLIMIT.
func TestMemoryShares(t *testing.T) {
	const share = 400 << 20
	s, err := ParseSettings("c", map[string]string{"name": "c", "connector.class": "iceberg", "source": "kafka"})
	if err != nil {
		t.Fatal(err)
	}
	s.applyMemory(share)
	var sum int64
	for _, k := range []sdk.Kind{sdk.KindSource, sdk.KindPartitioner, sdk.KindSink} {
		sum += s.Memory[k]
		if s.Processes[k].MemoryBytes != s.Memory[k] || !slices.Contains(s.Processes[k].Env(), "GOMEMLIMIT="+strconv.FormatInt(s.Memory[k], 10)) {
			t.Errorf("%s: GOMEMLIMIT %v, share %d", k, s.Processes[k].Env(), s.Memory[k])
		}
	}
	// What the binaries' pages take comes off first.
	if pages := 3 * int64(binaryPages); sum+pages > share || sum+pages < share*99/100 {
		t.Errorf("the processes' shares add up to %d of %d, less %d for their binaries' pages", sum, share, pages)
	}
	if s.Memory[sdk.KindSink] <= s.Memory[sdk.KindSource] || s.Memory[sdk.KindSource] <= s.Memory[sdk.KindPartitioner] {
		t.Errorf("shares %v: the sink holds most, the partitioner least", s.Memory)
	}
	if _, ok := s.Memory[sdk.KindMaintenance]; ok {
		t.Errorf("a share for maintenance, which is outside the budget: %v", s.Memory)
	}

	// process.sink.memory set: the sink keeps it, the others share the rest.
	s, err = ParseSettings("c", map[string]string{"name": "c", "connector.class": "iceberg", "source": "kafka", "process.sink.memory": "100MiB"})
	if err != nil {
		t.Fatal(err)
	}
	s.applyMemory(share)
	if s.Memory[sdk.KindSink] != 100<<20 || s.Memory[sdk.KindSource] <= s.Memory[sdk.KindPartitioner] {
		t.Errorf("shares %v: the sink keeps its 100 MiB, the source and the partitioner share the rest", s.Memory)
	}
	sum = 0
	for _, b := range s.Memory {
		sum += b
	}
	if sum > share {
		t.Errorf("the shares add up to %d, over %d", sum, share)
	}

	// No budget: nothing changes.
	s, _ = ParseSettings("c", map[string]string{"name": "c", "connector.class": "iceberg", "source": "kafka"})
	s.applyMemory(0)
	if s.Memory != nil || s.Processes[sdk.KindSink].MemoryBytes != 0 {
		t.Errorf("no budget: %v %+v", s.Memory, s.Processes[sdk.KindSink])
	}
}
