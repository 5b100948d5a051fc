package partspec

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// TestLabel pins the one partition name floe shows: the CLI printed
// ts_day=2026-01-01 while /metrics and the status said ts_day=20454.
func TestLabel(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "seen", Type: iceberg.PrimitiveTypes.Timestamp},
	)
	// Field ids as a table assigns them (Bind leaves them to the table).
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1001, Name: "seen_hour", Transform: iceberg.HourTransform{}},
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1002, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 16}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1003, Name: "country", Transform: iceberg.IdentityTransform{}},
	)
	ids := []int{1000, 1001, 1002, 1003}
	values := map[int]any{ids[0]: int32(20454), ids[1]: int32(20454*24 + 13), ids[2]: int32(3), ids[3]: "NO"}
	if got, want := Label(&spec, sc, values), "ts_day=2026-01-01/seen_hour=2026-01-01-13/id_bucket=3/country=NO"; got != want {
		t.Errorf("Label = %q, want %q", got, want)
	}
	values[ids[3]] = nil
	delete(values, ids[2])
	if got, want := Label(&spec, sc, values), "ts_day=2026-01-01/seen_hour=2026-01-01-13/id_bucket=null/country=null"; got != want {
		t.Errorf("nulls: Label = %q, want %q", got, want)
	}
	if got := Label(&spec, nil, map[int]any{ids[0]: int32(20454)}); got != "ts_day=20454/seen_hour=null/id_bucket=null/country=null" {
		t.Errorf("without a schema: Label = %q", got)
	}
	if got := Label(iceberg.UnpartitionedSpec, sc, nil); got != "" {
		t.Errorf("unpartitioned: Label = %q", got)
	}
	if got := Label(nil, sc, nil); got != "" {
		t.Errorf("nil spec: Label = %q", got)
	}
}
