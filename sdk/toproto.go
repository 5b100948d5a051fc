package sdk

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floehq/floe/sdk/internal/arrowipc"
	"github.com/floehq/floe/sdk/internal/pb"
)

// This file converts the author API's types to their wire form (the plugin
// side of the protocol). fromproto.go goes the other way.

func kindToProto(k Kind) pb.Kind {
	switch k {
	case KindSource:
		return pb.Kind_KIND_SOURCE
	case KindPartitioner:
		return pb.Kind_KIND_PARTITIONER
	case KindSink:
		return pb.Kind_KIND_SINK
	case KindMaintenance:
		return pb.Kind_KIND_MAINTENANCE
	}
	return pb.Kind_KIND_UNSPECIFIED
}

func componentToProto(c Component) *pb.Component {
	out := &pb.Component{
		Kind:    kindToProto(c.Kind()),
		Name:    c.Name,
		Version: c.Version,
		Summary: c.Summary,
		Aliases: append([]string(nil), c.Aliases...),
	}
	for _, capa := range c.Capabilities {
		out.Capabilities = append(out.Capabilities, capabilityToProto(capa))
	}
	for _, f := range c.Spec.Fields() {
		out.Fields = append(out.Fields, fieldToProto(f))
	}
	return out
}

func fieldToProto(f Field) *pb.ConfigField {
	return &pb.ConfigField{
		Name:         f.Name,
		Type:         string(f.Type),
		Doc:          f.Doc,
		HasDefault:   f.HasDefault,
		DefaultValue: f.DefaultValue,
		Required:     f.Required,
		Secret:       f.Secret || f.Type == TypePassword,
		Group:        f.Group,
		Example:      f.Example,
		Allowed:      append([]string(nil), f.Allowed...),
		Prefix:       f.Prefix,
		Importance:   string(f.Importance),
	}
}

func configErrorsToProto(errs []ConfigError) []*pb.ConfigError {
	out := make([]*pb.ConfigError, len(errs))
	for i, e := range errs {
		out[i] = &pb.ConfigError{Key: e.Key, Message: e.Message}
	}
	return out
}

// batchToProto encodes b for the wire, splitting it into several batches
// that chain when its encoding exceeds limit bytes. It does not release
// b.Records.
func batchToProto(b Batch, limit int) ([]*pb.Batch, error) {
	return batchToProtoWith(b, limit, arrowipc.EncodeRecordBatch)
}

// batchToProtoWith is batchToProto encoding the whole batch with encode,
// which may reuse its memory (an arrowipc.Encoder): then the result's
// Records are valid until encode's next call. The pieces of a split batch
// get memory of their own.
func batchToProtoWith(b Batch, limit int, encode func(arrow.RecordBatch) ([]byte, error)) ([]*pb.Batch, error) {
	if b.Records == nil {
		return []*pb.Batch{{
			Partition: b.Partition, FromOffset: b.From, NextOffset: b.Next,
			SchemaId: b.SchemaID, Skipped: b.Skipped,
		}}, nil
	}
	ipc, err := encode(b.Records)
	if err != nil {
		return nil, fmt.Errorf("partition %s batch [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	rows := b.Records.NumRows()
	if len(ipc) <= limit {
		return []*pb.Batch{{
			Partition: b.Partition, FromOffset: b.From, NextOffset: b.Next,
			SchemaId: b.SchemaID, Records: ipc, NumRecords: rows, Skipped: b.Skipped,
		}}, nil
	}
	offsets, err := offsetColumn(b)
	if err != nil {
		return nil, err
	}
	if rows <= 1 {
		off := b.From
		if rows == 1 {
			off = offsets.Value(0)
		}
		return nil, fmt.Errorf("%w: partition %s offset %d encodes to %d bytes, over the %d-byte limit; "+
			"make the record smaller at the source (or split it into several records)",
			ErrRecordTooLarge, b.Partition, off, len(ipc), limit)
	}
	left, right := splitBatch(b, offsets.Value(int(rows/2)), rows/2)
	defer left.Records.Release()
	defer right.Records.Release()
	l, err := batchToProto(left, limit)
	if err != nil {
		return nil, err
	}
	r, err := batchToProto(right, limit)
	if err != nil {
		return nil, err
	}
	return append(l, r...), nil
}

func schemaToProto(s Schema) (*pb.Schema, error) {
	ipc, err := arrowipc.EncodeSchema(s.Arrow)
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", s.ID, err)
	}
	return &pb.Schema{Id: s.ID, Avro: s.Avro, Arrow: ipc, Subject: s.Subject}, nil
}

func deadLettersToProto(in []DeadLetter) []*pb.DeadLetter {
	out := make([]*pb.DeadLetter, len(in))
	for i, d := range in {
		out[i] = &pb.DeadLetter{
			Partition: d.Partition, Offset: d.Offset, TimestampMs: d.TimestampMs,
			Key: d.Key, Value: d.Value, Headers: d.Headers, Stage: d.Stage, Reason: d.Reason,
		}
		if len(d.HeaderList) > 0 {
			out[i].HeaderList = make([]*pb.Header, len(d.HeaderList))
			// Hosts older than header_list read the map: last value wins.
			out[i].Headers = make(map[string][]byte, len(d.HeaderList))
			for j, h := range d.HeaderList {
				out[i].HeaderList[j] = &pb.Header{Key: h.Key, Value: h.Value}
				out[i].Headers[h.Key] = h.Value
			}
		}
	}
	return out
}

func rejectedToProto(in []Rejected) []*pb.RejectedRecord {
	out := make([]*pb.RejectedRecord, len(in))
	for i, r := range in {
		out[i] = &pb.RejectedRecord{Offset: r.Offset, Reason: r.Reason}
	}
	return out
}

func writeResultsToProto(in []WriteResult) []*pb.WriteResult {
	out := make([]*pb.WriteResult, len(in))
	for i, r := range in {
		out[i] = &pb.WriteResult{
			Payload: r.Payload, Writer: int32(r.Writer), Records: r.Records,
			Bytes: r.Bytes, Files: int32(r.Files), Checkpoint: r.Checkpoint,
		}
	}
	return out
}

func tableCommitsToProto(in []TableCommit) []*pb.TableCommit {
	out := make([]*pb.TableCommit, len(in))
	for i, c := range in {
		out[i] = &pb.TableCommit{
			Table: c.Table, SnapshotId: c.SnapshotID, Records: c.Records,
			Files: int32(c.Files), Attempts: int32(c.Attempts),
		}
	}
	return out
}

func taskRunsToProto(in []TaskRun) []*pb.TaskRun {
	out := make([]*pb.TaskRun, len(in))
	for i, r := range in {
		out[i] = &pb.TaskRun{
			Table: r.Table, Task: r.Task, Trigger: r.Trigger,
			StartedUnixMs: unixMs(r.Started), DurationMs: r.Duration.Milliseconds(),
			FilesBefore: r.FilesBefore, FilesAfter: r.FilesAfter,
			BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter,
			Error: r.Error, Detail: r.Detail,
		}
	}
	return out
}

func tableHealthToProto(in []TableHealth) []*pb.TableHealth {
	out := make([]*pb.TableHealth, len(in))
	for i, h := range in {
		out[i] = &pb.TableHealth{
			Table: h.Table, Snapshots: h.Snapshots, DataFiles: h.DataFiles,
			SmallFiles: h.SmallFiles, DeleteFiles: h.DeleteFiles, DataBytes: h.DataBytes,
			Manifests: h.Manifests, MetadataBytes: h.MetadataBytes,
			LastCommitUnixMs: unixMs(h.LastCommit), Records: h.Records,
			MaxPartition: h.MaxPartition, MaxPartitionFiles: h.MaxPartitionFiles,
		}
	}
	return out
}

func capabilityToProto(c Capability) pb.Capability {
	switch c {
	case CapabilityFrontier:
		return pb.Capability_CAPABILITY_FRONTIER
	case CapabilitySchemas:
		return pb.Capability_CAPABILITY_SCHEMAS
	case CapabilityLoad:
		return pb.Capability_CAPABILITY_LOAD
	case CapabilityWaits:
		return pb.Capability_CAPABILITY_WAITS
	}
	return pb.Capability_CAPABILITY_UNSPECIFIED
}
