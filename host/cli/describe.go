package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// TableDescription is `floe table describe`'s answer; --json prints it.
type TableDescription struct {
	Table            string            `json:"table"`
	UUID             string            `json:"uuid"`
	FormatVersion    int               `json:"format_version"`
	Location         string            `json:"location"`
	MetadataLocation string            `json:"metadata_location"`
	LastUpdated      time.Time         `json:"last_updated"`
	Schema           SchemaDescription `json:"schema"`
	PartitionSpec    SpecDescription   `json:"partition_spec"`
	Properties       map[string]string `json:"properties"`
	// CurrentSnapshotID is null for a table without data.
	CurrentSnapshotID *int64                `json:"current_snapshot_id"`
	Snapshots         []SnapshotDescription `json:"snapshots"`
	Files             FileStats             `json:"files"`
	// Maintenance holds the maintenance plugin's runs on this table,
	// oldest first, from the history files under the data dir
	// (<data.dir>/maintenance/<connector>.jsonl); empty when none.
	Maintenance []MaintenanceRun `json:"maintenance_runs"`
}

// SchemaDescription is the current schema.
type SchemaDescription struct {
	ID     int                `json:"id"`
	Fields []FieldDescription `json:"fields"`
}

// FieldDescription is one column; Fields holds a struct's fields, a
// list's element or a map's key and value.
type FieldDescription struct {
	ID       int                `json:"id"`
	Name     string             `json:"name"`
	Type     string             `json:"type"`
	Required bool               `json:"required"`
	Doc      string             `json:"doc,omitempty"`
	Fields   []FieldDescription `json:"fields,omitempty"`
}

// SpecDescription is the default partition spec.
type SpecDescription struct {
	ID     int                    `json:"id"`
	Fields []PartitionDescription `json:"fields"`
}

// PartitionDescription is one partition field.
type PartitionDescription struct {
	FieldID   int    `json:"field_id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
	SourceIDs []int  `json:"source_ids"`
	// Source names the source column(s), dotted for nested ones.
	Source string `json:"source"`
}

// SnapshotDescription is one snapshot, oldest first.
type SnapshotDescription struct {
	ID             int64             `json:"id"`
	ParentID       *int64            `json:"parent_id"`
	SequenceNumber int64             `json:"sequence_number"`
	Time           time.Time         `json:"time"`
	Operation      string            `json:"operation"`
	Summary        map[string]string `json:"summary"`
	// Checkpoint is floe.checkpoint of a floe commit, else empty.
	Checkpoint string `json:"checkpoint,omitempty"`
	Current    bool   `json:"current"`
}

// FileStats describes the current snapshot's live files.
type FileStats struct {
	DataFiles   int64 `json:"data_files"`
	DeleteFiles int64 `json:"delete_files"`
	// DataBytes is the total size of the data files.
	DataBytes int64 `json:"data_bytes"`
	Records   int64 `json:"records"`
	// SmallFiles counts data files under SmallFileBytes.
	SmallFiles     int64 `json:"small_files"`
	SmallFileBytes int64 `json:"small_file_bytes"`
	Manifests      int64 `json:"manifests"`
	// Partitions counts the partitions holding data files; MaxPartition
	// is the one with the most (field=value pairs, "" when
	// unpartitioned) and MaxPartitionFiles their count: what a query of
	// one partition opens.
	Partitions        int64  `json:"partitions"`
	MaxPartition      string `json:"max_partition"`
	MaxPartitionFiles int64  `json:"max_partition_files"`
}

// defaultTargetFileSize is the iceberg sink's default file size; a data
// file under smallFileShare of the target counts as small (the share
// iceberg-go's compaction planner uses).
const (
	defaultTargetFileSize = 128 << 20
	smallFileShare        = 0.75
)

// smallFileBytes is the small-file threshold of a table: 75 % of its
// write.target-file-size-bytes, or of the sink's 128 MiB default.
func smallFileBytes(props iceberg.Properties) int64 {
	target := int64(defaultTargetFileSize)
	if v, err := strconv.ParseInt(props["write.target-file-size-bytes"], 10, 64); err == nil && v > 0 {
		target = v
	}
	return int64(float64(target) * smallFileShare)
}

// describeTable reads a table's metadata and the current snapshot's
// manifests. smallBytes <= 0 uses the table's own threshold.
func describeTable(ctx context.Context, tbl *table.Table, smallBytes int64) (TableDescription, error) {
	md := tbl.Metadata()
	d := TableDescription{
		Table:            strings.Join(tbl.Identifier(), "."),
		UUID:             md.TableUUID().String(),
		FormatVersion:    md.Version(),
		Location:         md.Location(),
		MetadataLocation: tbl.MetadataLocation(),
		LastUpdated:      time.UnixMilli(md.LastUpdatedMillis()).UTC(),
		Properties:       map[string]string{},
		Snapshots:        []SnapshotDescription{},
	}
	maps.Copy(d.Properties, md.Properties())

	sc := md.CurrentSchema()
	d.Schema = SchemaDescription{ID: sc.ID, Fields: describeFields(sc.Fields())}

	spec := md.PartitionSpec()
	d.PartitionSpec = SpecDescription{ID: spec.ID(), Fields: []PartitionDescription{}}
	for _, f := range spec.Fields() {
		var names []string
		for _, id := range f.SourceIDs {
			n, ok := sc.FindColumnName(id)
			if !ok {
				n = fmt.Sprintf("#%d", id)
			}
			names = append(names, n)
		}
		d.PartitionSpec.Fields = append(d.PartitionSpec.Fields, PartitionDescription{
			FieldID: f.FieldID, Name: f.Name, Transform: f.Transform.String(),
			SourceIDs: slices.Clone(f.SourceIDs), Source: strings.Join(names, ", "),
		})
	}

	cur := md.CurrentSnapshot()
	if cur != nil {
		id := cur.SnapshotID
		d.CurrentSnapshotID = &id
	}
	for _, s := range md.Snapshots() {
		sd := SnapshotDescription{
			ID: s.SnapshotID, ParentID: s.ParentSnapshotID, SequenceNumber: s.SequenceNumber,
			Time: time.UnixMilli(s.TimestampMs).UTC(), Summary: map[string]string{},
			Current: cur != nil && s.SnapshotID == cur.SnapshotID,
		}
		if s.Summary != nil {
			sd.Operation = string(s.Summary.Operation)
			maps.Copy(sd.Summary, s.Summary.Properties)
			sd.Checkpoint = s.Summary.Properties["floe.checkpoint"]
		}
		d.Snapshots = append(d.Snapshots, sd)
	}
	slices.SortStableFunc(d.Snapshots, func(a, b SnapshotDescription) int {
		return a.Time.Compare(b.Time)
	})

	if smallBytes <= 0 {
		smallBytes = smallFileBytes(md.Properties())
	}
	d.Files.SmallFileBytes = smallBytes
	if cur != nil {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return d, fmt.Errorf("table %s: open its file system: %w", d.Table, err)
		}
		manifests, err := cur.Manifests(fs)
		if err != nil {
			return d, fmt.Errorf("table %s: read manifest list of snapshot %d: %w", d.Table, cur.SnapshotID, err)
		}
		d.Files.Manifests = int64(len(manifests))
		perPartition := map[string]int64{}
		for _, m := range manifests {
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					return d, fmt.Errorf("table %s: read manifest %s: %w", d.Table, m.FilePath(), err)
				}
				df := e.DataFile()
				if df.ContentType() != iceberg.EntryContentData {
					d.Files.DeleteFiles++
					continue
				}
				d.Files.DataFiles++
				perPartition[lake.PartitionLabel(md, df)]++
				d.Files.DataBytes += df.FileSizeBytes()
				d.Files.Records += df.Count()
				if df.FileSizeBytes() < smallBytes {
					d.Files.SmallFiles++
				}
			}
		}
		d.Files.Partitions = int64(len(perPartition))
		for _, k := range slices.Sorted(maps.Keys(perPartition)) {
			if n := perPartition[k]; n > d.Files.MaxPartitionFiles {
				d.Files.MaxPartition, d.Files.MaxPartitionFiles = k, n
			}
		}
	}
	return d, nil
}

// describeFields describes columns, nested ones included.
func describeFields(fields []iceberg.NestedField) []FieldDescription {
	out := make([]FieldDescription, 0, len(fields))
	for _, f := range fields {
		out = append(out, describeField(f.ID, f.Name, f.Type, f.Required, f.Doc))
	}
	return out
}

func describeField(id int, name string, t iceberg.Type, required bool, doc string) FieldDescription {
	fd := FieldDescription{ID: id, Name: name, Type: t.String(), Required: required, Doc: doc}
	switch nt := t.(type) {
	case *iceberg.StructType:
		fd.Type = "struct"
		fd.Fields = describeFields(nt.FieldList)
	case *iceberg.ListType:
		fd.Type = "list"
		fd.Fields = []FieldDescription{describeField(nt.ElementID, "element", nt.Element, nt.ElementRequired, "")}
	case *iceberg.MapType:
		fd.Type = "map"
		fd.Fields = []FieldDescription{
			describeField(nt.KeyID, "key", nt.KeyType, true, ""),
			describeField(nt.ValueID, "value", nt.ValueType, nt.ValueRequired, ""),
		}
	}
	return fd
}

// printTable prints a description for people.
func printTable(w io.Writer, d TableDescription) error {
	p := newPrinter(w)
	p.printf("table %s\n", d.Table)
	tw := p.columns()
	tw.printf("  location\t%s\n", d.Location)
	tw.printf("  metadata\t%s\n", d.MetadataLocation)
	tw.printf("  format version\t%d\n", d.FormatVersion)
	tw.printf("  uuid\t%s\n", d.UUID)
	tw.printf("  last updated\t%s\n", d.LastUpdated.Format(time.RFC3339))
	tw.end()

	p.printf("\nschema (id %d)\n", d.Schema.ID)
	tw = p.columns()
	tw.printf("  id\tname\ttype\t\tdoc\n")
	var walk func(fs []FieldDescription, depth int)
	walk = func(fs []FieldDescription, depth int) {
		for _, f := range fs {
			req := "optional"
			if f.Required {
				req = "required"
			}
			tw.printf("  %d\t%s%s\t%s\t%s\t%s\n", f.ID, strings.Repeat("  ", depth), f.Name, f.Type, req, f.Doc)
			walk(f.Fields, depth+1)
		}
	}
	walk(d.Schema.Fields, 0)
	tw.end()

	p.printf("\npartition spec (id %d)\n", d.PartitionSpec.ID)
	if len(d.PartitionSpec.Fields) == 0 {
		p.printf("  unpartitioned\n")
	} else {
		tw = p.columns()
		for _, f := range d.PartitionSpec.Fields {
			tw.printf("  %d\t%s\t%s(%s)\n", f.FieldID, f.Name, f.Transform, f.Source)
		}
		tw.end()
	}

	p.printf("\nproperties\n")
	tw = p.columns()
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		tw.printf("  %s\t%s\n", k, clip(d.Properties[k], 80))
	}
	tw.end()

	p.printf("\nsnapshots (%d)\n", len(d.Snapshots))
	if len(d.Snapshots) > 0 {
		tw = p.columns()
		tw.printf("  \tid\ttime\toperation\tadded records\tadded files\tcheckpoint\tsummary\n")
		for _, s := range d.Snapshots {
			mark := ""
			if s.Current {
				mark = "*"
			}
			tw.printf("  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, s.ID, s.Time.Format(time.RFC3339), s.Operation,
				s.Summary["added-records"], s.Summary["added-data-files"], s.Checkpoint, otherSummary(s.Summary))
		}
		tw.end()
	}

	p.printf("\nfiles (current snapshot)\n")
	tw = p.columns()
	tw.printf("  data files\t%s (%s)\n", group(d.Files.DataFiles), bytesIEC(d.Files.DataBytes))
	tw.printf("  records\t%s\n", group(d.Files.Records))
	tw.printf("  small files\t%s (under %s)\n", group(d.Files.SmallFiles), bytesIEC(d.Files.SmallFileBytes))
	tw.printf("  delete files\t%s\n", group(d.Files.DeleteFiles))
	tw.printf("  manifests\t%s\n", group(d.Files.Manifests))
	if d.Files.Partitions > 0 && len(d.PartitionSpec.Fields) > 0 {
		tw.printf("  partitions\t%s, the fullest %s with %s data files\n", group(d.Files.Partitions), d.Files.MaxPartition, group(d.Files.MaxPartitionFiles))
	}
	tw.end()

	printMaintenance(p, d.Maintenance)

	// Not every machine has the duckdb CLI: say where to get it, and the
	// same query through DuckDB's Python package.
	meta := strings.TrimPrefix(d.MetadataLocation, "file://")
	p.printf("\nquery it with DuckDB (the duckdb CLI: https://duckdb.org/docs/installation):\n"+
		"  duckdb -c \"INSTALL iceberg; LOAD iceberg; SELECT count(*) FROM iceberg_scan('%s');\"\n"+
		"or with its Python package (pip install duckdb):\n"+
		"  python3 -c \"import duckdb; duckdb.sql(\\\"INSTALL iceberg; LOAD iceberg\\\"); duckdb.sql(\\\"SELECT count(*) FROM iceberg_scan('%s')\\\").show()\"\n",
		meta, meta)
	return p.err
}

// otherSummary prints the summary keys the columns do not show (floe's
// offsets and committer, Iceberg's totals); long values are cut, --json
// has them whole.
func otherSummary(s map[string]string) string {
	const maxValue = 60
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		switch {
		case k == "added-records", k == "added-data-files", k == "floe.checkpoint", k == "iceberg-version":
			continue
		case v == "0" && (strings.HasSuffix(k, "-deletes") || strings.HasSuffix(k, "delete-files")):
			continue
		}
		if len(v) > maxValue {
			v = v[:maxValue] + "…"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// bytesIEC formats a size: 1.5 GiB.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// clip shortens long values (a name mapping is kilobytes of JSON) for the
// text view; --json keeps them whole.
func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
