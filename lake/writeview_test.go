package lake

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestWriterProps(t *testing.T) {
	const key = table.ParquetPageSizeBytesKey
	def := strconv.Itoa(PageSizeBytes)
	for _, tc := range []struct {
		name              string
		tableProps, props map[string]string
		want              map[string]string
	}{
		{"nothing set", nil, nil, map[string]string{key: def}},
		{"write-props kept", nil, map[string]string{"write.parquet.compression-codec": "snappy"},
			map[string]string{"write.parquet.compression-codec": "snappy", key: def}},
		{"the table's size wins", map[string]string{key: "1048576"}, nil, map[string]string{}},
		{"write-props' size wins", nil, map[string]string{key: "65536"}, map[string]string{key: "65536"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before map[string]string
			if tc.props != nil {
				before = maps.Clone(tc.props)
			}
			got := WriterProps(tc.tableProps, tc.props)
			if !maps.Equal(got, tc.want) {
				t.Errorf("WriterProps = %v, want %v", got, tc.want)
			}
			if !maps.Equal(tc.props, before) {
				t.Errorf("the write-props were changed: %v, were %v", tc.props, before)
			}
		})
	}
}

func TestWriteViewKeepsTheTable(t *testing.T) {
	sc := icebergapi.NewSchema(0, icebergapi.NestedField{ID: 1, Name: "id", Type: icebergapi.PrimitiveTypes.Int64, Required: true})
	md, err := table.NewMetadata(sc, icebergapi.UnpartitionedSpec, table.UnsortedSortOrder, "file:///tmp/t",
		icebergapi.Properties{"write.parquet.compression-codec": "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.New(table.Identifier{"db", "t"}, md, "file:///tmp/t/metadata/v1.metadata.json", nil, nil)
	view, err := WriteView(tbl, map[string]string{"write.parquet.compression-codec": "snappy", table.ParquetPageSizeBytesKey: "65536"})
	if err != nil {
		t.Fatal(err)
	}
	if got := view.Properties()["write.parquet.compression-codec"]; got != "snappy" {
		t.Errorf("view codec %q, want snappy", got)
	}
	if got := view.Properties()[table.ParquetPageSizeBytesKey]; got != "65536" {
		t.Errorf("view page size %q, want 65536", got)
	}
	if got := tbl.Properties()["write.parquet.compression-codec"]; got != "zstd" || len(tbl.Properties()) != 1 {
		t.Errorf("the table's properties changed: %v", tbl.Properties())
	}
	if view.MetadataLocation() != tbl.MetadataLocation() || !slices.Equal(view.Identifier(), tbl.Identifier()) {
		t.Errorf("view is %v at %s, want %v at %s", view.Identifier(), view.MetadataLocation(), tbl.Identifier(), tbl.MetadataLocation())
	}
	if same, err := WriteView(tbl, nil); err != nil || same != tbl {
		t.Errorf("WriteView without props = %p, %v; want the table itself", same, err)
	}
}
