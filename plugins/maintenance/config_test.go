package maintenance

import (
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

func TestConfigDefaults(t *testing.T) {
	s, err := parseSettings("orders", sdk.NewConfig(map[string]string{keyIcebergTables: "sales.orders, sales.refunds", keyDataDir: "/d"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.pollInterval != time.Minute || s.retainLast != 10 || s.maxAge != time.Hour || s.orphanAge != 72*time.Hour ||
		s.minInputFiles != 2 || s.strategy != strategyHead || s.sizeRatio != 3 || !s.partialProgress || s.maxGroups != 2 || s.copyRowGroupsMin != 4<<20 ||
		s.copyRowGroupsMax != 4 || s.tailRowGroupsMax != 6 || s.idleAfter != time.Hour ||
		s.orphanDryRun || s.catalogName != "floe" {
		t.Errorf("defaults: %+v", s)
	}
	if strings.Join(s.tables, ",") != "sales.orders,sales.refunds" {
		t.Errorf("tables %v", s.tables)
	}
	for _, task := range allTasks {
		if !s.enabled[task] {
			t.Errorf("%s off by default", task)
		}
	}
	if th := s.triggers[taskRewriteData]; th.smallFileCount != 4 || th.dataFileCount != 0 || th.minInterval != time.Second || th.idlePartitions != 1 {
		t.Errorf("rewrite triggers: %+v", th)
	}
	// Idle partitions follow the commit interval, between a minute and
	// an hour; a set value wins, 0 turns them off.
	for cfg, want := range map[[2]string]time.Duration{
		{"1000", ""}: time.Minute, {"10s", ""}: 10 * time.Minute, {"300000", ""}: time.Hour, {"1000", "5000"}: 5 * time.Second, {"1000", "0"}: 0,
	} {
		raw := map[string]string{keyIcebergTables: "a.b", keyCommitInterval: cfg[0]}
		if cfg[1] != "" {
			raw[keyIdlePartition] = cfg[1]
		}
		s, err := parseSettings("orders", sdk.NewConfig(raw))
		if err != nil || s.idleAfter != want || (s.triggers[taskRewriteData].idlePartitions == 1) != (want > 0) {
			t.Errorf("commit.interval.ms=%s idle-partition.ms=%q: idle after %s, trigger %d (%v); want %s", cfg[0], cfg[1], s.idleAfter, s.triggers[taskRewriteData].idlePartitions, err, want)
		}
	}
	// The poll interval follows the connector's commit interval.
	for commit, want := range map[string]time.Duration{"1000": time.Second, "100": time.Second, "10s": 10 * time.Second, "600000": time.Minute} {
		s, err := parseSettings("orders", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyCommitInterval: commit}))
		if err != nil || s.pollInterval != want {
			t.Errorf("commit.interval.ms=%s: poll interval %s (%v); want %s", commit, s.pollInterval, err, want)
		}
	}
	if s, _ := parseSettings("orders", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyCommitInterval: "1000", keyPollInterval: "5s"})); s.pollInterval != 5*time.Second {
		t.Errorf("a set poll interval: %s", s.pollInterval)
	}
	if got := s.targetSize(map[string]string{"write.target-file-size-bytes": "1048576"}); got != 1<<20 {
		t.Errorf("target from the table: %d", got)
	}
	if got := s.targetSize(nil); got != 128<<20 {
		t.Errorf("default target: %d", got)
	}
	// Every key has docs; the plugin's own start with maintenance., the
	// others are the sink's and the host's it reads (borrowedFields).
	borrowed := map[string]bool{}
	for _, f := range borrowedFields() {
		borrowed[f.Name] = true
	}
	for _, f := range Spec().Fields() {
		if f.Doc == "" || !strings.HasPrefix(f.Name, prefix) && !borrowed[f.Name] {
			t.Errorf("key %q: doc %q", f.Name, f.Doc)
		}
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for key, val := range map[string]string{
		keyPollInterval:    "10",
		keyOrphanOlderThan: "60000",
		"maintenance.rewrite-data-files.trigger.data-file-count": "-1",
		"maintenance.expire-snapshots.enabled":                   "maybe",
		keyMinInputFiles:                                         "1",
		keyStrategy:                                              "leveled",
		keySizeRatio:                                             "0",
		keyTables:                                                "orders",
		keyIntermediateCompression:                               "zstd:99",
		keyReplanInterval:                                        "10ms",
		keyCopyRowGroups:                                         "-1",
		keyTailRowGroupsMax:                                      "-1",
		keyIdlePartition:                                         "-5s",
	} {
		_, err := parseSettings("c", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", key: val}))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v", key, val, err)
		}
	}
	// The head strategy appends by copying: copying off is an error that
	// names both keys.
	if _, err := parseSettings("c", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyCopyRowGroups: "0"})); err == nil ||
		!strings.Contains(err.Error(), keyCopyRowGroups) || !strings.Contains(err.Error(), keyStrategy) {
		t.Errorf("head without copying: %v", err)
	}
	if _, err := parseSettings("c", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyCopyRowGroups: "0", keyStrategy: strategyTiered})); err != nil {
		t.Errorf("tiered without copying: %v", err)
	}
	if _, err := parseSettings("c", sdk.NewConfig(nil)); err == nil || !strings.Contains(err.Error(), keyTables) {
		t.Errorf("no tables: %v", err)
	}
	s, err := parseSettings("c", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyTables: "x.y", keyDynamic: "true"}))
	if err != nil || strings.Join(s.tables, ",") != "x.y" || s.dynamic {
		t.Errorf("override: %+v %v", s.tables, err)
	}
	s, err = parseSettings("c", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b,a.c,d.e", keyDynamic: "true"}))
	if err != nil || strings.Join(s.namespaces, ",") != "a,d" || !s.dynamic {
		t.Errorf("dynamic: %+v %v", s.namespaces, err)
	}
}

func TestParseCompression(t *testing.T) {
	for in, want := range map[string]string{"table": "the table's codec", " ZSTD:1 ": "zstd:1", "lz4raw": "lz4raw", "gzip:9": "gzip:9", "zstd": "zstd"} {
		c, err := parseCompression(in)
		if err != nil || c.String() != want {
			t.Errorf("parseCompression(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	for _, in := range []string{"", "zlib", "snappy:3", "zstd:0", "zstd:x", "gzip:10"} {
		if c, err := parseCompression(in); err == nil {
			t.Errorf("parseCompression(%q) = %v; want an error", in, c)
		}
	}
}
