package iceberg

import (
	"encoding/json"
	"fmt"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
)

// payloadVersion is the version of the WriteResult payload format.
const payloadVersion = 1

// payload is the Payload of one writer's sdk.WriteResult for one
// checkpoint: JSON, so it can be read when debugging, versioned by "v".
//
//	{"v":1, "checkpoint":7, "writer":0, "tables":[{
//	   "table":"sales.orders",
//	   "partitions":["orders/0","orders/3"],   // source partitions with rows for the table
//	   "floors":{"orders/3":1200},             // rows below were dropped: the table held them
//	   "groups":[{"spec_id":0,"schema_id":1,"format_version":2,
//	              "records":1000,"bytes":52311,
//	              "files":["<base64>", …]}]}]}
//
// Each file is iceberg-go's manifest-entry Avro encoding of one data file
// (codec.EncodeDataFile), decodable in any process with the table's
// partition spec and schema of the group's ids and its format version. A
// table entry without groups reports rows the writer saw and dropped all
// of: the committer still checks its floors.
type payload struct {
	Version    int            `json:"v"`
	Checkpoint uint64         `json:"checkpoint"`
	Writer     int            `json:"writer"`
	Tables     []tablePayload `json:"tables"`
}

type tablePayload struct {
	Table      string           `json:"table"`
	Partitions []string         `json:"partitions,omitempty"`
	Floors     map[string]int64 `json:"floors,omitempty"`
	// Mixed lists partitions whose floor changed within the checkpoint.
	Mixed  []string    `json:"mixed,omitempty"`
	Groups []fileGroup `json:"groups,omitempty"`
}

// fileGroup holds data files written against one spec, schema and format
// version.
type fileGroup struct {
	SpecID        int      `json:"spec_id"`
	SchemaID      int      `json:"schema_id"`
	FormatVersion int      `json:"format_version"`
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Files         [][]byte `json:"files"`
}

func (p payload) encode() ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("iceberg sink: encode write result: %w", err)
	}
	return b, nil
}

func decodePayload(b []byte) (payload, error) {
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return payload{}, fmt.Errorf("iceberg sink: write result payload is not this sink's: %w", err)
	}
	if p.Version != payloadVersion {
		return payload{}, fmt.Errorf("iceberg sink: write result payload version %d, this sink reads version %d", p.Version, payloadVersion)
	}
	return p, nil
}

// encodeGroup encodes data files written by a pipeline on tbl.
func encodeGroup(tbl *table.Table, files []icebergapi.DataFile) (fileGroup, error) {
	spec, sc, fv := tbl.Spec(), tbl.Schema(), tbl.Metadata().Version()
	specID := spec.ID()
	g := fileGroup{SpecID: specID, SchemaID: sc.ID, FormatVersion: fv, Files: make([][]byte, 0, len(files))}
	for _, df := range files {
		b, err := codec.EncodeDataFile(df, spec, sc, fv)
		if err != nil {
			return fileGroup{}, fmt.Errorf("encode data file %s: %w", df.FilePath(), err)
		}
		g.Files = append(g.Files, b)
		g.Records += df.Count()
		g.Bytes += df.FileSizeBytes()
	}
	return g, nil
}

// decode decodes a group's files with the spec and schema tbl knows them
// by.
func (g fileGroup) decode(tbl *table.Table) ([]icebergapi.DataFile, error) {
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(g.SpecID)
	if spec == nil {
		return nil, fmt.Errorf("the table has no partition spec %d (the files were written against it)", g.SpecID)
	}
	var sc *icebergapi.Schema
	for _, s := range meta.Schemas() {
		if s.ID == g.SchemaID {
			sc = s
			break
		}
	}
	if sc == nil {
		return nil, fmt.Errorf("the table has no schema %d (the files were written against it)", g.SchemaID)
	}
	out := make([]icebergapi.DataFile, 0, len(g.Files))
	for _, b := range g.Files {
		df, err := codec.DecodeDataFile(b, *spec, sc, g.FormatVersion)
		if err != nil {
			return nil, err
		}
		out = append(out, df)
	}
	return out, nil
}
