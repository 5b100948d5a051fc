package kafka

import (
	"log/slog"
	"runtime/debug"
	"strconv"

	"github.com/floehq/floe/sdk"
)

// bufferPart is the part of the process's memory share (sdk.KeyMemoryBytes)
// the tasks' record buffers take together; librdkafka's fetch queue and
// fetch responses take as much again, outside Go's heap, and the Go heap
// gets what is left (batches being built, their Arrow encoding).
const bufferPart = 0.25

// queueOverhead is what librdkafka's prefetch queue holds per byte of the
// payloads queued.max.messages.kbytes counts: each message carries its
// own structures besides key and value, about as much again for records
// of a few hundred bytes (bench section 2: the kafka plugin's own memory
// 132-139 MiB at a 115 MiB share when the queue was sized by payload).
const queueOverhead = 2

// minGoMemory is the least GOMEMLIMIT fitMemory sets.
const minGoMemory = 32 << 20

// fitMemory sizes a task's buffers to the process's share of the worker's
// memory budget, when the host gave one (floe.memory.bytes), for the
// settings the user left unset: buffer.max.bytes, and librdkafka's
// queued.max.messages.kbytes (a quarter of the buffer in payload, half of
// it in memory) and fetch.max.bytes (half the buffer).
// It returns the Go heap limit that leaves room for librdkafka's memory,
// which GOMEMLIMIT does not see; 0 without a budget.
func (s *settings) fitMemory(cfg sdk.Config, tasks int) int64 {
	mem, _ := strconv.ParseInt(cfg.String(sdk.KeyMemoryBytes), 10, 64)
	if mem <= 0 {
		return 0
	}
	tasks = max(tasks, 1)
	if cfg.String(KeyBufferMaxBytes) == "" {
		s.maxBytes = min(defaultBufferMaxBytes, max(int64(float64(mem)*bufferPart)/int64(tasks), minBufferMaxBytes))
	}
	user := cfg.Prefixed(KeyKafkaPrefix)
	queue := s.maxBytes / 2 / queueOverhead // payload bytes
	if _, set := user["queued.max.messages.kbytes"]; !set {
		s.kafka["queued.max.messages.kbytes"] = int(max(queue/1024, 1024))
	} else if kb, err := strconv.ParseInt(user["queued.max.messages.kbytes"], 10, 64); err == nil {
		queue = kb * 1024
	}
	queue *= queueOverhead // memory
	fetch := s.maxBytes / 2
	if _, set := user["fetch.max.bytes"]; !set {
		s.kafka["fetch.max.bytes"] = int(max(fetch, 1<<20))
	} else if n, err := strconv.ParseInt(user["fetch.max.bytes"], 10, 64); err == nil {
		fetch = n
	}
	return max(mem-int64(tasks)*(queue+fetch), minGoMemory)
}

// limitGoMemory lowers the process's GOMEMLIMIT (which the host set to
// its whole share) to what librdkafka leaves. Every task of the process
// computes the same limit, so setting it again changes nothing.
func limitGoMemory(limit int64, log *slog.Logger) {
	if limit <= 0 {
		return
	}
	if prev := debug.SetMemoryLimit(limit); prev != limit {
		log.Info("kafka source: Go memory limit set to the process's share of memory.max.bytes less librdkafka's queues", "limit_bytes", limit)
	}
}
