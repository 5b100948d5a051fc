package runtime

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/host/compat"
	"github.com/floehq/floe/host/dlq"
	"github.com/floehq/floe/sdk"
)

// Connector config keys the host owns (docs/architecture.md, "Connector
// config"). Components declare the rest.
const (
	KeyName               = "name"
	KeyConnectorClass     = "connector.class"
	KeySource             = "source"
	KeyPartitioner        = "partitioner"
	KeyMaintenance        = "maintenance"
	KeyTasksMax           = "tasks.max"
	KeyCommitInterval     = "commit.interval.ms"
	KeyCommitIntervalAlt  = "iceberg.control.commit.interval-ms"
	KeyMaxPending         = "checkpoint.max.pending"
	KeyMaxBufferedBytes   = "checkpoint.max.buffered.bytes"
	KeyMaxInflight        = "pipeline.max.inflight.batches"
	KeyRestartMaxAttempts = "plugin.restart.max.attempts"
	KeyRestartBackoff     = "plugin.restart.backoff.ms"
	// The restart policy of failed connectors and tasks (the worker
	// applies it): Connect's errors.retry.* keys, and floe's first delay.
	KeyRetryTimeout    = "errors.retry.timeout"
	KeyRetryDelayMax   = "errors.retry.delay.max.ms"
	KeyRetryDelayFirst = "restart.backoff.initial.ms"
	// KeyProcessPrefix starts process.<kind>.cpus, .memory and .nice.
	KeyProcessPrefix = "process."
)

// Keys the host adds to every plugin's config; users do not set them.
const (
	// KeyDataDir is the worker's data.dir, where embedded defaults (the
	// SQLite catalog, the local warehouse) live.
	KeyDataDir = sdk.KeyDataDir
)

// Defaults of the host's keys.
const (
	DefaultPartitioner      = "hash"
	DefaultCommitInterval   = 10 * time.Second
	DefaultMaxPending       = 3
	DefaultMaxBufferedBytes = 512 << 20
	DefaultMaxInflight      = 4
	DefaultRestartAttempts  = 5
	DefaultRestartBackoff   = time.Second
	// DefaultMaintenanceNice is process.maintenance.nice when unset.
	DefaultMaintenanceNice = 10
	// MaxRestartBackoff caps the doubling restart backoff.
	MaxRestartBackoff = 60 * time.Second
	// DefaultRetryTimeout bounds the automatic restarts of one failure: it
	// outlasts a long catalog or registry outage.
	DefaultRetryTimeout    = 30 * time.Minute
	DefaultRetryDelayMax   = time.Minute
	DefaultRetryDelayFirst = time.Second
)

const (
	groupCommon   = "Common"
	groupPipeline = "Pipeline"
	groupErrors   = "Error Handling"
	groupProcess  = "Plugin Processes"
	groupCompat   = "Kafka Connect and Apache Iceberg Sink"
)

// HostSpec declares the connector keys the host owns: their types,
// defaults and docs come from here for validation, config/validate and
// `floe plugins` alike.
func HostSpec() sdk.Spec {
	positive := func(v string) error {
		d, err := sdk.ParseDuration(v)
		if err == nil && d <= 0 {
			return errors.New("must be positive")
		}
		return nil
	}
	fields := []*sdk.Field{
		sdk.String(KeyName).Require().Rank(sdk.High).InGroup(groupCommon).
			Describe("Globally unique name of the connector."),
		sdk.String(KeyConnectorClass).Require().Rank(sdk.High).InGroup(groupCommon).
			Describe("The sink component (iceberg, or the Apache Iceberg sink's class, org.apache.iceberg.connect.IcebergSinkConnector).").WithExample("iceberg"),
		sdk.String(KeySource).Require().Rank(sdk.High).InGroup(groupCommon).
			Describe("The source component (kafka, datagen). Without it, a connector with topics or topics.regex reads Kafka, as a Kafka Connect sink does.").WithExample("kafka"),
		sdk.String(KeyPartitioner).Default(DefaultPartitioner).Rank(sdk.Medium).InGroup(groupCommon).
			Describe("The partitioner component that picks a writer for every record (hash, round-robin, skew-aware)."),
		sdk.String(KeyMaintenance).Rank(sdk.Medium).InGroup(groupCommon).
			Describe("The maintenance component (iceberg-maintenance); empty runs no maintenance.").WithExample("iceberg-maintenance"),
		sdk.Int(KeyTasksMax).Default("1").Min(1).Rank(sdk.High).InGroup(groupCommon).
			Describe("Number of source tasks, and of sink writers."),
		sdk.Duration(KeyCommitInterval).Default(strconv.Itoa(int(DefaultCommitInterval.Milliseconds()))).Check(positive).
			Rank(sdk.High).InGroup(groupPipeline).
			Describe("Checkpoint interval: how often written files are committed (milliseconds, or a Go duration)."),
		sdk.Duration(KeyCommitIntervalAlt).Check(positive).Rank(sdk.Low).InGroup(groupPipeline).
			Describe("Alias of commit.interval.ms, as the Apache Iceberg sink names it; commit.interval.ms wins when both are set."),
		sdk.Int(KeyMaxPending).Default(strconv.Itoa(DefaultMaxPending)).Min(1).Rank(sdk.Low).InGroup(groupPipeline).
			Describe("Flushed checkpoints that may wait for their commit before ingestion waits too."),
		sdk.Long(KeyMaxBufferedBytes).Default(strconv.Itoa(DefaultMaxBufferedBytes)).Min(1).Rank(sdk.Low).InGroup(groupPipeline).
			Describe("Force a checkpoint once this many bytes were written since the last one; writes wait while a checkpoint that far behind cannot start."),
		sdk.Int(KeyMaxInflight).Default(strconv.Itoa(DefaultMaxInflight)).Min(1).Rank(sdk.Low).InGroup(groupPipeline).
			Describe("Batches each source task may have read and not yet written: the backpressure bound."),
		sdk.String(dlq.KeyTolerance).Default("none").OneOf("none", "all").Rank(sdk.Medium).InGroup(groupErrors).
			Describe("none fails the task on the first bad record; all skips bad records (to the dead-letter topic when one is set)."),
		sdk.String(dlq.KeyTopic).Rank(sdk.Medium).InGroup(groupErrors).
			Describe("Dead-letter topic for records that cannot be written (needs errors.tolerance=all)."),
		sdk.Int(dlq.KeyReplicationFactor).Default("3").Rank(sdk.Low).InGroup(groupErrors).
			Check(func(v string) error {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n < 1 && n != -1 {
					return errors.New("must be at least 1, or -1 for the broker default")
				}
				return nil
			}).
			Describe("Replication factor of the dead-letter topic when floe creates it, capped at the broker count."),
		sdk.Bool(dlq.KeyContextHeaders).Default("true").Rank(sdk.Low).InGroup(groupErrors).
			Describe("Add Kafka Connect's __connect.errors.* headers to dead letters."),
		sdk.Prefix(dlq.KeyProducerPrefix).Rank(sdk.Low).InGroup(groupErrors).
			Describe("librdkafka settings of the dead-letter producer. Without its own bootstrap.servers it uses kafka.bootstrap.servers and the connector's kafka.* connection settings (security.protocol, sasl.*, ssl.*, …)."),
		sdk.Bool(dlq.KeyLogEnable).Default("false").Rank(sdk.Medium).InGroup(groupErrors).
			Describe("Log every bad record."),
		sdk.Bool(dlq.KeyLogIncludeMessages).Default("false").Rank(sdk.Low).InGroup(groupErrors).
			Describe("Include the record's key and value in those logs."),
		sdk.Long(KeyRetryTimeout).Default(strconv.FormatInt(DefaultRetryTimeout.Milliseconds(), 10)).Min(-1).Rank(sdk.Medium).InGroup(groupErrors).
			Describe("How long floe keeps restarting a failed connector or task (milliseconds; -1 forever, 0 never, as Kafka Connect, where a failed task waits for a human). A configuration error or a failure a plugin marks permanent is never restarted."),
		sdk.Long(KeyRetryDelayMax).Default(strconv.FormatInt(DefaultRetryDelayMax.Milliseconds(), 10)).Min(1).Rank(sdk.Low).InGroup(groupErrors).
			Describe("Longest wait between two automatic restarts of a failed connector or task (milliseconds)."),
		sdk.Duration(KeyRetryDelayFirst).Default(strconv.FormatInt(DefaultRetryDelayFirst.Milliseconds(), 10)).Check(positive).Rank(sdk.Low).InGroup(groupErrors).
			Describe("Wait before the first automatic restart of a failed connector or task; doubled per attempt up to errors.retry.delay.max.ms, with ±20 % jitter (milliseconds, or a Go duration)."),
		sdk.Int(KeyRestartMaxAttempts).Default(strconv.Itoa(DefaultRestartAttempts)).Min(0).Rank(sdk.Low).InGroup(groupProcess).
			Describe("Restarts of a crashed plugin process before its tasks are FAILED."),
		sdk.Duration(KeyRestartBackoff).Default(strconv.Itoa(int(DefaultRestartBackoff.Milliseconds()))).Check(positive).
			Rank(sdk.Low).InGroup(groupProcess).
			Describe("Wait before the first restart of a crashed plugin process; doubled per attempt, capped at 60 s."),
	}
	fields = append(fields, compat.Fields(groupCompat)...)
	for _, k := range sdk.AllKinds() {
		nice := sdk.Int(processKey(k, "nice")).Min(-20).Max(19).Rank(sdk.Low).InGroup(groupProcess).
			Describe(fmt.Sprintf("Niceness of the %s plugin process (negative values need CAP_SYS_NICE).", k)).WithExample("10")
		if k == sdk.KindMaintenance {
			// Compaction may take every CPU ingestion leaves, and must
			// give it back at once.
			nice.Default(strconv.Itoa(DefaultMaintenanceNice)).
				Describe(fmt.Sprintf("Niceness of the maintenance plugin process: %d by default, so compaction takes only the CPU ingestion leaves (0 runs it beside ingestion as an equal).", DefaultMaintenanceNice))
		}
		fields = append(fields,
			sdk.Double(processKey(k, "cpus")).Min(0.01).Rank(sdk.Low).InGroup(groupProcess).
				Describe(fmt.Sprintf("CPUs of the %s plugin process (sets GOMAXPROCS, rounded up).", k)).WithExample("2"),
			sdk.String(processKey(k, "memory")).Check(func(v string) error { _, err := parseBytes(v); return err }).
				Rank(sdk.Low).InGroup(groupProcess).
				Describe(fmt.Sprintf("Memory of the %s plugin process (sets GOMEMLIMIT): bytes, or with a unit KiB, MiB, GiB (K, M, G, KB, MB, GB mean the same).", k)).WithExample("512MiB"),
			nice,
		)
	}
	return sdk.NewSpec(fields...)
}

func processKey(k sdk.Kind, what string) string {
	return KeyProcessPrefix + string(k) + "." + what
}

// Settings are a connector's host keys, parsed.
type Settings struct {
	Tasks              int
	CommitInterval     time.Duration
	MaxPending         int
	MaxBufferedBytes   int64
	MaxInflight        int
	RestartMaxAttempts int
	RestartBackoff     time.Duration
	Retry              RetryPolicy
	Processes          map[sdk.Kind]ProcessLimits
	DLQ                dlq.Config
	// Memory holds each plugin process's part of the connector's memory
	// share (Options.MemoryBytes), which it receives as floe.memory.bytes;
	// nil without a budget.
	Memory map[sdk.Kind]int64
}

// RetryPolicy is how failed connectors and tasks are restarted.
type RetryPolicy struct {
	// Timeout bounds the restarts of one failure, counted from the
	// failure; negative restarts forever, 0 never.
	Timeout time.Duration
	// First is the wait before the first restart; it doubles per attempt
	// up to Max.
	First, Max time.Duration
}

// ProcessLimits are the resource settings of one plugin process.
type ProcessLimits struct {
	// CPUs sets GOMAXPROCS (rounded up); 0 leaves it.
	CPUs float64
	// MemoryBytes sets GOMEMLIMIT; 0 leaves it.
	MemoryBytes int64
	Nice        int
}

// Env returns the environment entries the limits translate to.
func (l ProcessLimits) Env() []string {
	var env []string
	if l.CPUs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(int(math.Ceil(l.CPUs))))
	}
	if l.MemoryBytes > 0 {
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(l.MemoryBytes, 10))
	}
	return env
}

// ParseSettings validates the host keys of cfg against [HostSpec] and
// parses them. The error lists every bad key.
func ParseSettings(name string, cfg map[string]string) (Settings, error) {
	spec := HostSpec()
	if errs := spec.Validate(cfg); len(errs) > 0 {
		var all []error
		for _, e := range errs {
			all = append(all, e)
		}
		return Settings{}, fmt.Errorf("connector %s: %w", name, errors.Join(all...))
	}
	c := spec.Config(cfg)
	r := c.Reader()
	s := Settings{
		Tasks:              r.Int(KeyTasksMax),
		CommitInterval:     r.Duration(KeyCommitInterval),
		MaxPending:         r.Int(KeyMaxPending),
		MaxBufferedBytes:   r.Int64(KeyMaxBufferedBytes),
		MaxInflight:        r.Int(KeyMaxInflight),
		RestartMaxAttempts: r.Int(KeyRestartMaxAttempts),
		RestartBackoff:     r.Duration(KeyRestartBackoff),
		Retry: RetryPolicy{
			Timeout: time.Duration(r.Int64(KeyRetryTimeout)) * time.Millisecond,
			First:   r.Duration(KeyRetryDelayFirst),
			Max:     time.Duration(r.Int64(KeyRetryDelayMax)) * time.Millisecond,
		},
		Processes: map[sdk.Kind]ProcessLimits{},
	}
	if _, set := cfg[KeyCommitInterval]; !set {
		if alt, ok := cfg[KeyCommitIntervalAlt]; ok && strings.TrimSpace(alt) != "" {
			s.CommitInterval = r.Duration(KeyCommitIntervalAlt)
		}
	}
	for _, k := range sdk.AllKinds() {
		var l ProcessLimits
		l.CPUs = r.Float64(processKey(k, "cpus"))
		if v := c.String(processKey(k, "memory")); v != "" {
			l.MemoryBytes, _ = parseBytes(v)
		}
		l.Nice = r.Int(processKey(k, "nice"))
		s.Processes[k] = l
	}
	if err := r.Err(); err != nil {
		return Settings{}, fmt.Errorf("connector %s: %w", name, err)
	}
	d, err := dlq.ParseConfig(name, c.Map())
	if err != nil {
		return Settings{}, fmt.Errorf("connector %s: %w", name, err)
	}
	s.DLQ = d
	return s, nil
}

// ParseBytes reads a size: bytes, or a number with a unit KiB, MiB, GiB
// or TiB (K, M, G, T, KB, MB, GB, TB mean the same), as process.<kind>
// .memory takes it; the worker's memory.max.bytes too.
func ParseBytes(v string) (int64, error) { return parseBytes(v) }

// parseBytes reads "536870912", "512MiB", "512M", "2GB" (binary units).
func parseBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q: use bytes or a number with KiB, MiB or GiB", v)
	}
	mult := map[string]float64{
		"": 1, "B": 1,
		"K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
		"T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use KiB, MiB or GiB)", v, s[i:])
	}
	return int64(n * mult), nil
}
