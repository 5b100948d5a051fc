package partspec

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// Label names a partition for people: spec's fields as name=value joined
// by "/", each value as Iceberg prints it for its source column
// (ts_day=2026-01-01, ts_hour=2026-01-01-13, not ts_day=20454), null as
// "null"; "" for an unpartitioned spec. values holds the partition tuple
// by partition field id, as iceberg.DataFile.Partition returns it; sc
// resolves the source columns (a field whose source column sc lacks
// prints its raw value). A nil spec is unpartitioned.
//
// Label is the one partition name floe shows: `floe table describe`, the
// connector status and /metrics all print what it returns.
func Label(spec *iceberg.PartitionSpec, sc *iceberg.Schema, values map[int]any) string {
	if spec == nil || spec.NumFields() == 0 {
		return ""
	}
	parts := make([]string, 0, spec.NumFields())
	for _, f := range spec.Fields() {
		v, ok := values[f.FieldID]
		var text string
		switch {
		case !ok || v == nil:
			text = "null"
		default:
			text = fmt.Sprint(v)
			if sc != nil {
				if src, found := sc.FindFieldByID(f.SourceID()); found {
					text = f.Transform.ToHumanStrType(src.Type, v)
				}
			}
		}
		parts = append(parts, f.Name+"="+text)
	}
	return strings.Join(parts, "/")
}
