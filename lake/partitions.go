package lake

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake/partspec"
)

// PartitionLabel names data file df's partition in table md for people,
// as [partspec.Label] does against the table's current schema
// (ts_day=2026-01-01; "" when unpartitioned). A file written under a spec
// other than the table's default carries that spec's id ("spec 0:
// ts_day=2026-01-01"), so files of two specs never share a label; a file
// whose spec md lacks lists its values by partition field id.
func PartitionLabel(md table.Metadata, df iceberg.DataFile) string {
	spec := md.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		values := df.Partition()
		if len(values) == 0 {
			return ""
		}
		ids := make([]int, 0, len(values))
		for id := range values {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%d=%v", id, values[id])
		}
		return fmt.Sprintf("spec %d: %s", df.SpecID(), strings.Join(parts, "/"))
	}
	label := partspec.Label(spec, md.CurrentSchema(), df.Partition())
	if label != "" && spec.ID() != md.DefaultPartitionSpec() {
		label = fmt.Sprintf("spec %d: %s", spec.ID(), label)
	}
	return label
}
