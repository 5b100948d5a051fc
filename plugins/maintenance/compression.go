package maintenance

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// compression is a Parquet codec and level for compaction output; the
// zero value means the table's own.
type compression struct {
	codec string
	level int // 0: the codec's default
}

// Codecs iceberg-go writes, and the level range of those that take one.
var (
	parquetCodecs = []string{"zstd", "snappy", "lz4raw", "lz4", "gzip", "brotli", "uncompressed"}
	codecLevels   = map[string][2]int{"zstd": {1, 22}, "gzip": {1, 9}, "brotli": {0, 11}}
)

// parseCompression reads "table", "codec" or "codec:level".
func parseCompression(v string) (compression, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "table" {
		return compression{}, nil
	}
	name, lvl, hasLevel := strings.Cut(v, ":")
	if !slices.Contains(parquetCodecs, name) {
		return compression{}, fmt.Errorf("unknown codec %q: want table or one of %s, optionally with :level", name, strings.Join(parquetCodecs, ", "))
	}
	c := compression{codec: name}
	if !hasLevel {
		return c, nil
	}
	bounds, ok := codecLevels[name]
	if !ok {
		return compression{}, fmt.Errorf("codec %s takes no level (%q)", name, v)
	}
	n, err := strconv.Atoi(lvl)
	if err != nil || n < bounds[0] || n > bounds[1] {
		return compression{}, fmt.Errorf("level %q of %s: want %d to %d", lvl, name, bounds[0], bounds[1])
	}
	c.level = n
	return c, nil
}

func (c compression) String() string {
	switch {
	case c.codec == "":
		return "the table's codec"
	case c.level == 0:
		return c.codec
	default:
		return c.codec + ":" + strconv.Itoa(c.level)
	}
}

// writeView is tbl as compaction writes it (lake.WriteView): with floe's
// page size (lake.WriterProps) and its Parquet codec replaced by c; the
// table itself keeps its own properties.
func writeView(tbl *table.Table, c compression) (*table.Table, error) {
	var props map[string]string
	if c.codec != "" {
		// Always set the level: one the table has for its own codec may
		// be out of range for c's.
		level := table.ParquetCompressionLevelDefault
		if c.level != 0 {
			level = c.level
		}
		props = map[string]string{
			table.ParquetCompressionKey:      c.codec,
			table.ParquetCompressionLevelKey: strconv.Itoa(level),
		}
	}
	view, err := lake.WriteView(tbl, lake.WriterProps(tbl.Properties(), props))
	if err != nil {
		return nil, fmt.Errorf("compaction output (%s): %w", c, err)
	}
	return view, nil
}
