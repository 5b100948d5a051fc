package client

import (
	"fmt"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/pb"
	"github.com/floehq/floe/sdk/internal/shm"
)

// This file converts between wire messages and the host's types. The plugin
// side has its own converters (package sdk): the two cannot share a package
// without sdk importing one that imports sdk.

func kindToProto(k sdk.Kind) pb.Kind {
	switch k {
	case sdk.KindSource:
		return pb.Kind_KIND_SOURCE
	case sdk.KindPartitioner:
		return pb.Kind_KIND_PARTITIONER
	case sdk.KindSink:
		return pb.Kind_KIND_SINK
	case sdk.KindMaintenance:
		return pb.Kind_KIND_MAINTENANCE
	}
	return pb.Kind_KIND_UNSPECIFIED
}

func kindFromProto(k pb.Kind) sdk.Kind {
	switch k {
	case pb.Kind_KIND_SOURCE:
		return sdk.KindSource
	case pb.Kind_KIND_PARTITIONER:
		return sdk.KindPartitioner
	case pb.Kind_KIND_SINK:
		return sdk.KindSink
	case pb.Kind_KIND_MAINTENANCE:
		return sdk.KindMaintenance
	}
	return ""
}

func componentFromProto(c *pb.Component, sdkVersion string) Component {
	out := Component{
		Kind:       kindFromProto(c.GetKind()),
		Name:       c.GetName(),
		Aliases:    c.GetAliases(),
		Version:    c.GetVersion(),
		Summary:    c.GetSummary(),
		SDKVersion: sdkVersion,
	}
	for _, capa := range c.GetCapabilities() {
		out.Capabilities = append(out.Capabilities, capabilityFromProto(capa))
	}
	for _, f := range c.GetFields() {
		out.Fields = append(out.Fields, sdk.Field{
			Name:         f.GetName(),
			Type:         sdk.Type(f.GetType()),
			Doc:          f.GetDoc(),
			HasDefault:   f.GetHasDefault(),
			DefaultValue: f.GetDefaultValue(),
			Required:     f.GetRequired(),
			Secret:       f.GetSecret(),
			Group:        f.GetGroup(),
			Example:      f.GetExample(),
			Allowed:      f.GetAllowed(),
			Prefix:       f.GetPrefix(),
			Importance:   sdk.Importance(f.GetImportance()),
		})
	}
	return out
}

// batchFromProto reads a batch a plugin sent. A batch in shared memory is
// opened at once, giving this process its own descriptor: the plugin may
// close its one as soon as it knows the response arrived.
func batchFromProto(b *pb.Batch) (Batch, error) {
	out := Batch{
		Partition:  b.GetPartition(),
		From:       b.GetFromOffset(),
		Next:       b.GetNextOffset(),
		SchemaID:   b.GetSchemaId(),
		NumRecords: b.GetNumRecords(),
		Skipped:    b.GetSkipped(),
		IPC:        b.GetRecords(),
	}
	if sh := b.GetShared(); sh != nil {
		f, err := shm.Open(int(sh.GetPid()), int(sh.GetFd()), sh.GetSize())
		if err != nil {
			return Batch{}, fmt.Errorf("batch of partition %s [%d, %d): %w", out.Partition, out.From, out.Next, err)
		}
		out.shared = f
	}
	return out, nil
}

func batchToProto(b Batch) *pb.Batch {
	return &pb.Batch{
		Partition:  b.Partition,
		FromOffset: b.From,
		NextOffset: b.Next,
		SchemaId:   b.SchemaID,
		Records:    b.IPC,
		NumRecords: b.NumRecords,
		Skipped:    b.Skipped,
	}
}

func schemaFromProto(s *pb.Schema) Schema {
	return Schema{ID: s.GetId(), Avro: s.GetAvro(), Subject: s.GetSubject(), ArrowIPC: s.GetArrow()}
}

func schemaToProto(s Schema) *pb.Schema {
	return &pb.Schema{Id: s.ID, Avro: s.Avro, Subject: s.Subject, Arrow: s.ArrowIPC}
}

func deadLettersFromProto(in []*pb.DeadLetter) []sdk.DeadLetter {
	out := make([]sdk.DeadLetter, len(in))
	for i, d := range in {
		out[i] = sdk.DeadLetter{
			Partition: d.GetPartition(), Offset: d.GetOffset(), TimestampMs: d.GetTimestampMs(),
			Key: d.GetKey(), Value: d.GetValue(), Headers: d.GetHeaders(),
			Stage: d.GetStage(), Reason: d.GetReason(),
		}
		if list := d.GetHeaderList(); len(list) > 0 {
			out[i].HeaderList = make([]sdk.Header, len(list))
			for j, h := range list {
				out[i].HeaderList[j] = sdk.Header{Key: h.GetKey(), Value: h.GetValue()}
			}
			out[i].Headers = nil
		}
	}
	return out
}

func configErrorsFromProto(in []*pb.ConfigError) []sdk.ConfigError {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdk.ConfigError, len(in))
	for i, e := range in {
		out[i] = sdk.ConfigError{Key: e.GetKey(), Message: e.GetMessage()}
	}
	return out
}

func rejectedFromProto(in []*pb.RejectedRecord) []sdk.Rejected {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdk.Rejected, len(in))
	for i, r := range in {
		out[i] = sdk.Rejected{Offset: r.GetOffset(), Reason: r.GetReason()}
	}
	return out
}

func writeResultsFromProto(in []*pb.WriteResult) []sdk.WriteResult {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdk.WriteResult, len(in))
	for i, r := range in {
		out[i] = sdk.WriteResult{
			Payload: r.GetPayload(), Writer: int(r.GetWriter()), Records: r.GetRecords(),
			Bytes: r.GetBytes(), Files: int(r.GetFiles()), Checkpoint: r.GetCheckpoint(),
		}
	}
	return out
}

func writeResultsToProto(in []sdk.WriteResult) []*pb.WriteResult {
	out := make([]*pb.WriteResult, len(in))
	for i, r := range in {
		out[i] = &pb.WriteResult{
			Payload: r.Payload, Writer: int32(r.Writer), Records: r.Records,
			Bytes: r.Bytes, Files: int32(r.Files), Checkpoint: r.Checkpoint,
		}
	}
	return out
}

func rangesToProto(in []sdk.Range) []*pb.Range {
	out := make([]*pb.Range, len(in))
	for i, r := range in {
		out[i] = &pb.Range{Partition: r.Partition, FromOffset: r.From, NextOffset: r.Next}
	}
	return out
}

func tableCommitsFromProto(in []*pb.TableCommit) []sdk.TableCommit {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdk.TableCommit, len(in))
	for i, c := range in {
		out[i] = sdk.TableCommit{
			Table: c.GetTable(), SnapshotID: c.GetSnapshotId(), Records: c.GetRecords(),
			Files: int(c.GetFiles()), Attempts: int(c.GetAttempts()),
		}
	}
	return out
}

func taskRunsFromProto(in []*pb.TaskRun) []sdk.TaskRun {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdk.TaskRun, len(in))
	for i, r := range in {
		out[i] = sdk.TaskRun{
			Table: r.GetTable(), Task: r.GetTask(), Trigger: r.GetTrigger(),
			Started:     fromUnixMs(r.GetStartedUnixMs()),
			Duration:    time.Duration(r.GetDurationMs()) * time.Millisecond,
			FilesBefore: r.GetFilesBefore(), FilesAfter: r.GetFilesAfter(),
			BytesBefore: r.GetBytesBefore(), BytesAfter: r.GetBytesAfter(),
			Error: r.GetError(), Detail: r.GetDetail(),
		}
	}
	return out
}

func tableHealthFromProto(in []*pb.TableHealth) []sdk.TableHealth {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdk.TableHealth, len(in))
	for i, h := range in {
		out[i] = sdk.TableHealth{
			Table: h.GetTable(), Snapshots: h.GetSnapshots(), DataFiles: h.GetDataFiles(),
			SmallFiles: h.GetSmallFiles(), DeleteFiles: h.GetDeleteFiles(), DataBytes: h.GetDataBytes(),
			Records: h.GetRecords(), Manifests: h.GetManifests(), MetadataBytes: h.GetMetadataBytes(),
			LastCommit:   fromUnixMs(h.GetLastCommitUnixMs()),
			MaxPartition: h.GetMaxPartition(), MaxPartitionFiles: h.GetMaxPartitionFiles(),
		}
	}
	return out
}

func fromUnixMs(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func offsetsResetToProto(r *sdk.OffsetsReset) *pb.OffsetsReset {
	if r == nil {
		return nil
	}
	return &pb.OffsetsReset{Positions: r.Positions, AfterCheckpoint: r.AfterCheckpoint}
}

// capabilityFromProto maps a declared capability; one this host does not
// know keeps its wire name, so it shows but never matches.
func capabilityFromProto(c pb.Capability) sdk.Capability {
	switch c {
	case pb.Capability_CAPABILITY_FRONTIER:
		return sdk.CapabilityFrontier
	case pb.Capability_CAPABILITY_SCHEMAS:
		return sdk.CapabilitySchemas
	case pb.Capability_CAPABILITY_LOAD:
		return sdk.CapabilityLoad
	case pb.Capability_CAPABILITY_WAITS:
		return sdk.CapabilityWaits
	}
	return sdk.Capability(c.String())
}
