package sdk

import (
	"fmt"
	"maps"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk/internal/arrowipc"
	"github.com/floehq/floe/sdk/internal/pb"
	"github.com/floehq/floe/sdk/internal/shm"
)

// This file converts wire messages to the author API's types (the plugin
// side of the protocol). toproto.go goes the other way.

func kindFromProto(k pb.Kind) Kind {
	switch k {
	case pb.Kind_KIND_SOURCE:
		return KindSource
	case pb.Kind_KIND_PARTITIONER:
		return KindPartitioner
	case pb.Kind_KIND_SINK:
		return KindSink
	case pb.Kind_KIND_MAINTENANCE:
		return KindMaintenance
	}
	return ""
}

// batchFromProto decodes a wire batch. The caller releases Records, which
// is nil when the batch carries no rows.
func batchFromProto(b *pb.Batch, mem memory.Allocator) (Batch, error) {
	if b == nil {
		return Batch{}, fmt.Errorf("request has no batch")
	}
	out := Batch{
		Partition: b.GetPartition(),
		From:      b.GetFromOffset(),
		Next:      b.GetNextOffset(),
		SchemaID:  b.GetSchemaId(),
		Skipped:   b.GetSkipped(),
	}
	data := b.GetRecords()
	if sh := b.GetShared(); sh != nil {
		// The host's descriptor stays open until this call returns; the
		// bytes are read once, into memory the record may keep.
		f, err := shm.Open(int(sh.GetPid()), int(sh.GetFd()), sh.GetSize())
		if err != nil {
			return Batch{}, fmt.Errorf("partition %s batch [%d, %d): %w", out.Partition, out.From, out.Next, err)
		}
		data, err = f.ReadAll()
		_ = f.Close()
		if err != nil {
			return Batch{}, fmt.Errorf("partition %s batch [%d, %d): %w", out.Partition, out.From, out.Next, err)
		}
	}
	if len(data) == 0 {
		return out, nil
	}
	rec, err := arrowipc.DecodeRecordBatch(data, mem)
	if err != nil {
		return Batch{}, fmt.Errorf("partition %s batch [%d, %d): %w", out.Partition, out.From, out.Next, err)
	}
	out.Records = rec
	return out, nil
}

func schemaFromProto(s *pb.Schema) (Schema, error) {
	if s == nil {
		return Schema{}, fmt.Errorf("request has no schema")
	}
	as, err := arrowipc.DecodeSchema(s.GetArrow())
	if err != nil {
		return Schema{}, fmt.Errorf("schema %d: %w", s.GetId(), err)
	}
	return Schema{ID: s.GetId(), Avro: s.GetAvro(), Arrow: as, Subject: s.GetSubject()}, nil
}

func writeResultsFromProto(in []*pb.WriteResult) []WriteResult {
	out := make([]WriteResult, len(in))
	for i, r := range in {
		out[i] = WriteResult{
			Payload: r.GetPayload(), Writer: int(r.GetWriter()), Records: r.GetRecords(),
			Bytes: r.GetBytes(), Files: int(r.GetFiles()), Checkpoint: r.GetCheckpoint(),
		}
	}
	return out
}

func rangesFromProto(in []*pb.Range) []Range {
	out := make([]Range, len(in))
	for i, r := range in {
		out[i] = Range{Partition: r.GetPartition(), From: r.GetFromOffset(), Next: r.GetNextOffset()}
	}
	return out
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func offsetsResetFromProto(r *pb.OffsetsReset) *OffsetsReset {
	if r == nil {
		return nil
	}
	pos := maps.Clone(r.GetPositions())
	if pos == nil {
		pos = map[string]int64{}
	}
	return &OffsetsReset{Positions: pos, AfterCheckpoint: r.GetAfterCheckpoint()}
}
