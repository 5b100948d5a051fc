package lake

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestPartitionLabel: the label `floe table describe`, the maintenance
// plugin's health (status, /metrics) and its run details share prints
// values as people read them, and marks files of an older spec.
func TestPartitionLabel(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	byDay := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}})
	md, err := table.NewMetadata(sc, &byDay, table.UnsortedSortOrder, "file:///tmp/t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	file := func(md table.Metadata, specID int, values map[int]any) iceberg.DataFile {
		t.Helper()
		b, err := iceberg.NewDataFileBuilder(*md.PartitionSpecByID(specID), iceberg.EntryContentData, "file:///tmp/t/f.parquet", iceberg.ParquetFile, values, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	day := file(md, 0, map[int]any{1000: int32(20454)})
	if got, want := PartitionLabel(md, day), "ts_day=2026-01-01"; got != want {
		t.Errorf("label = %q, want %q", got, want)
	}

	// The table moves to bucket(4, id): the day file is of spec 0 now.
	b, err := table.MetadataBuilderFromBase(md, "")
	if err != nil {
		t.Fatal(err)
	}
	byBucket := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1001, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}})
	if err := b.AddPartitionSpec(&byBucket, false); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDefaultSpecID(1); err != nil {
		t.Fatal(err)
	}
	md2, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := PartitionLabel(md2, day), "spec 0: ts_day=2026-01-01"; got != want {
		t.Errorf("old spec: label = %q, want %q", got, want)
	}
	if got, want := PartitionLabel(md2, file(md2, 1, map[int]any{1001: int32(3)})), "id_bucket=3"; got != want {
		t.Errorf("new spec: label = %q, want %q", got, want)
	}
}
