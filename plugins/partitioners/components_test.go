package partitioners

import (
	"context"
	"strings"
	"testing"

	"github.com/floehq/floe/sdk"
)

func TestComponents(t *testing.T) {
	want := map[string][]string{
		"hash":       {keyFields, keyTables, keyDefaultPartitionBy, prefixTable},
		"roundrobin": nil,
		"skew-aware": {keyFields, keyTables, keyDefaultPartitionBy, prefixTable, keySkewHotThreshold, keySkewDecay, keySkewSpread, keySkewWidth, keySkewDepth, keySkewHeavy},
	}
	// The sink's keys a partitioner reads it declares too (a plugin
	// receives only its declared keys), and says whose they are.
	sinks := map[string]bool{keyTables: true, keyDefaultPartitionBy: true, prefixTable: true}
	for _, c := range Components() {
		if c.Kind() != sdk.KindPartitioner {
			t.Errorf("%s: kind %q", c.Name, c.Kind())
		}
		keys, ok := want[c.Name]
		if !ok {
			t.Errorf("unexpected component %q", c.Name)
			continue
		}
		delete(want, c.Name)
		var got []string
		for _, f := range c.Spec.Fields() {
			got = append(got, f.Name)
			if f.Doc == "" {
				t.Errorf("%s: %s has no doc", c.Name, f.Name)
			}
			if strings.HasPrefix(f.Name, "iceberg.") && (!sinks[f.Name] || !strings.Contains(f.Doc, "declared by the iceberg sink")) {
				t.Errorf("%s declares the sink's key %s without saying it is the sink's", c.Name, f.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(keys, ",") {
			t.Errorf("%s declares %v, want %v", c.Name, got, keys)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing components %v", want)
	}
}

// TestBadConfig: every bad value is reported with its key, by the spec
// (what the host's validate shows) and by Open (for direct callers).
func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		component, key, value string
	}{
		{"skew-aware", keySkewHotThreshold, "0"},
		{"skew-aware", keySkewHotThreshold, "1.5"},
		{"skew-aware", keySkewHotThreshold, "lots"},
		{"skew-aware", keySkewDecay, "0"},
		{"skew-aware", keySkewDecay, "1.5"},
		{"skew-aware", keySkewSpread, "0.5"},
		{"skew-aware", keySkewSpread, "NaN"},
		{"skew-aware", keySkewWidth, "8"},
		{"skew-aware", keySkewDepth, "17"},
		{"skew-aware", keySkewHeavy, "0"},
		{"hash", keyFields, "a,,b..c"},
		{"skew-aware", keyFields, ".x"},
	} {
		cfg := map[string]string{c.key: c.value}
		errs := component(t, c.component).Spec.Validate(cfg)
		if len(errs) == 0 || errs[0].Key != c.key {
			t.Errorf("%s %s=%q: spec says %v", c.component, c.key, c.value, errs)
		}
		_, err := component(t, c.component).Partitioner.Open(context.Background(), sdk.PartitionerOpenRequest{
			Config: sdk.NewConfig(cfg), Writers: 4,
		})
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s %s=%q: Open says %v", c.component, c.key, c.value, err)
		}
	}
	// The sink's partition spec is not ours to declare, but a bad one
	// fails Open, naming the key.
	_, err := component(t, "hash").Partitioner.Open(context.Background(), sdk.PartitionerOpenRequest{
		Config: sdk.NewConfig(map[string]string{keyDefaultPartitionBy: "bucket(id)"}), Writers: 4,
	})
	if err == nil || !strings.Contains(err.Error(), keyDefaultPartitionBy) {
		t.Errorf("bad partition spec: %v", err)
	}
	for _, name := range []string{"hash", "roundrobin", "skew-aware"} {
		if _, err := openErr(name, 0, nil); err == nil || !strings.Contains(err.Error(), "writers") {
			t.Errorf("%s with 0 writers: %v", name, err)
		}
	}
}

func TestClosed(t *testing.T) {
	for _, name := range []string{"hash", "roundrobin", "skew-aware"} {
		task := open(t, name, 2, nil)
		_ = task.Close(context.Background())
		if _, err := task.Partition(context.Background(), newBatch(t, keysOf([]int{1}))); err == nil {
			t.Errorf("%s: Partition after Close succeeded", name)
		}
	}
}
