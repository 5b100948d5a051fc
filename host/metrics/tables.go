package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floehq/floe/sdk"
)

// tableGauges are the table-health series, one gauge per measure of
// [sdk.TableHealth], labelled by connector and table.
type tableGauges []tableGauge

type tableGauge struct {
	vec   *prometheus.GaugeVec
	value func(sdk.TableHealth) float64
}

func newTableGauges() tableGauges {
	g := func(name, help string, value func(sdk.TableHealth) float64) tableGauge {
		return tableGauge{vec: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"connector", "table"}), value: value}
	}
	return tableGauges{
		g("floe_table_data_files", "Live data files of the table's current snapshot.", func(h sdk.TableHealth) float64 { return float64(h.DataFiles) }),
		g("floe_table_small_data_files", "Live data files under 75 % of the compaction target size.", func(h sdk.TableHealth) float64 { return float64(h.SmallFiles) }),
		g("floe_table_max_partition_data_files", "Live data files of the table's fullest partition (what a query of one partition opens).", func(h sdk.TableHealth) float64 { return float64(h.MaxPartitionFiles) }),
		g("floe_table_delete_files", "Live delete files (position and equality).", func(h sdk.TableHealth) float64 { return float64(h.DeleteFiles) }),
		g("floe_table_data_bytes", "Bytes of the live data files.", func(h sdk.TableHealth) float64 { return float64(h.DataBytes) }),
		g("floe_table_records", "Records of the live data files (before deletes).", func(h sdk.TableHealth) float64 { return float64(h.Records) }),
		g("floe_table_snapshots", "Snapshots in the table's metadata.", func(h sdk.TableHealth) float64 { return float64(h.Snapshots) }),
		g("floe_table_manifests", "Manifests of the current snapshot.", func(h sdk.TableHealth) float64 { return float64(h.Manifests) }),
		g("floe_table_metadata_bytes", "Size of the current metadata.json.", func(h sdk.TableHealth) float64 { return float64(h.MetadataBytes) }),
		g("floe_table_last_commit_timestamp_seconds", "When the table's current snapshot was committed (Unix time; 0 before the first).", func(h sdk.TableHealth) float64 {
			if h.LastCommit.IsZero() {
				return 0
			}
			return float64(h.LastCommit.UnixMilli()) / 1000
		}),
	}
}

func (t tableGauges) register(reg *prometheus.Registry) {
	for _, g := range t {
		reg.MustRegister(g.vec)
	}
}

func (t tableGauges) set(connector string, h sdk.TableHealth) {
	for _, g := range t {
		g.vec.WithLabelValues(connector, h.Table).Set(g.value(h))
	}
}

func (t tableGauges) forget(l prometheus.Labels) {
	for _, g := range t {
		g.vec.DeletePartialMatch(l)
	}
}
