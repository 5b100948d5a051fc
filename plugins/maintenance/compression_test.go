package maintenance

import (
	"maps"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// Compaction writes through a view with floe's page size unless the table
// sets one, and with the intermediate codec when one is given; the table
// keeps its own properties.
func TestWriteView(t *testing.T) {
	floePages := strconv.Itoa(lake.PageSizeBytes)
	withPages := maps.Clone(sinkTableProps)
	withPages[table.ParquetPageSizeBytesKey] = "1048576"
	for _, tc := range []struct {
		name                   string
		props                  iceberg.Properties
		c                      compression
		codec, level, pageSize string
	}{
		{"the table's codec", sinkTableProps, compression{}, "zstd", "", floePages},
		{"intermediate codec", sinkTableProps, compression{codec: "snappy"}, "snappy", strconv.Itoa(table.ParquetCompressionLevelDefault), floePages},
		{"intermediate level", sinkTableProps, compression{codec: "zstd", level: 3}, "zstd", "3", floePages},
		{"the table's page size", withPages, compression{}, "zstd", "", "1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := sqliteBackend(t)
			tbl := createTable(t, b.catalog(t), "db.events", tc.props)
			stored := maps.Clone(tbl.Properties())
			view, err := writeView(tbl, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			got := view.Properties()
			if got[table.ParquetCompressionKey] != tc.codec || got[table.ParquetCompressionLevelKey] != tc.level || got[table.ParquetPageSizeBytesKey] != tc.pageSize {
				t.Errorf("view codec %q level %q page size %q; want %q %q %q", got[table.ParquetCompressionKey],
					got[table.ParquetCompressionLevelKey], got[table.ParquetPageSizeBytesKey], tc.codec, tc.level, tc.pageSize)
			}
			if !maps.Equal(tbl.Properties(), stored) {
				t.Errorf("the table's properties changed: %v, were %v", tbl.Properties(), stored)
			}
		})
	}
}
