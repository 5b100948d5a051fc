package sdk

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"
)

// KeyDataDir is the key of the worker's data directory, which the host
// adds to every plugin's config.
const KeyDataDir = "floe.data.dir"

// KeyMemoryBytes is the key of the plugin process's share of the worker's
// memory budget (memory.max.bytes), in bytes, which the host adds to every
// plugin's config when the worker has a budget. The host also sets the
// process's GOMEMLIMIT to it. A plugin sizes what it buffers to it: the
// kafka source its fetch queues and record buffer, the iceberg sink its
// open data files. Absent means no budget.
const KeyMemoryBytes = "floe.memory.bytes"

// KeyCommitInterval is the key of the connector's checkpoint interval in
// milliseconds (its commit.interval.ms, or the host's default), which the
// host adds to every source's config. A source sizes how long it holds a
// partial batch to it: records reach the table at the next checkpoint
// whatever the batch's size, and every batch costs each process it
// crosses a wake-up.
const KeyCommitInterval = "floe.commit.interval.ms"

// Config is a connector's config as one component sees it: the keys of the
// connector that the component's [Spec] declares (exactly or by a prefix
// field) plus floe.data.dir, with the component's defaults filled in. The
// host hands a plugin nothing else, so a component that reads another
// component's key declares it too; a key the host owns arrives only when
// the spec names it exactly. Before Open, the SDK
// validated it against the component's [Spec] (types, choices, the fields'
// checks and the spec's own), so a plugin reads it without checking again.
//
// The typed getters ([Config.Int], [Config.Bool], …) return the zero value
// and no error for an absent or blank key, and an error naming the key for
// a value of the wrong type, which only a config that skipped the spec can
// hold (one built with [NewConfig] in a test, say). To read many keys and
// check once, use [Config.Reader].
type Config struct {
	values map[string]string
}

// NewConfig wraps a plain map, without defaults or validation. Tests use
// it.
func NewConfig(values map[string]string) Config {
	return Config{values: maps.Clone(values)}
}

// Get returns the raw value and whether the key is set.
func (c Config) Get(key string) (string, bool) {
	v, ok := c.values[key]
	return v, ok
}

// String returns the value of key, or "".
func (c Config) String(key string) string { return c.values[key] }

// typed reads key with parse; a blank value is the zero value.
func typed[T any](c Config, key string, t Type, parse func(string) (T, error)) (T, error) {
	var zero T
	v := strings.TrimSpace(c.values[key])
	if v == "" {
		return zero, nil
	}
	n, err := parse(v)
	if err != nil {
		return zero, KeyError(key, "invalid %s value %q", strings.ToLower(string(t)), c.values[key])
	}
	return n, nil
}

// Int returns the value of key as an int. The error is a [ConfigError]
// naming the key.
func (c Config) Int(key string) (int, error) {
	return typed(c, key, TypeInt, strconv.Atoi)
}

// Int64 returns the value of key as an int64. The error is a
// [ConfigError] naming the key.
func (c Config) Int64(key string) (int64, error) {
	return typed(c, key, TypeLong, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) })
}

// Float64 returns the value of key as a float64. The error is a
// [ConfigError] naming the key.
func (c Config) Float64(key string) (float64, error) {
	return typed(c, key, TypeDouble, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

// Bool returns the value of key as a bool ("true", "false", "1", "0", …,
// as strconv.ParseBool reads them). The error is a [ConfigError] naming
// the key.
func (c Config) Bool(key string) (bool, error) {
	return typed(c, key, TypeBoolean, strconv.ParseBool)
}

// Duration returns the value of key as a duration: a Go duration ("10s")
// or plain milliseconds ("1000"). The error is a [ConfigError] naming the
// key.
func (c Config) Duration(key string) (time.Duration, error) {
	return typed(c, key, TypeDuration, ParseDuration)
}

// List returns the comma-separated items of key, trimmed, empty ones dropped.
func (c Config) List(key string) []string {
	var out []string
	for _, s := range strings.Split(c.values[key], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Prefixed returns the keys that start with prefix, with prefix removed:
// Prefixed("kafka.") of {"kafka.acks": "all"} is {"acks": "all"}.
func (c Config) Prefixed(prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range c.values {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}

// Map returns a copy of every key and value.
func (c Config) Map() map[string]string { return maps.Clone(c.values) }

// Reader returns a reader of c's typed values that keeps their errors, so
// a plugin reads every key it needs and checks once, with every bad key
// named:
//
//	r := cfg.Reader()
//	s := settings{size: r.Int("batch.size"), linger: r.Duration("batch.linger.ms")}
//	if err := r.Err(); err != nil {
//		return settings{}, err
//	}
func (c Config) Reader() *ConfigReader { return &ConfigReader{c: c} }

// ConfigReader reads typed values from a [Config] like its getters do, and
// keeps the errors instead of returning them; a bad value reads as the
// zero value. Not safe for concurrent use.
type ConfigReader struct {
	c    Config
	errs []error
}

func keep[T any](r *ConfigReader, v T, err error) T {
	if err != nil {
		r.errs = append(r.errs, err)
	}
	return v
}

// Int is [Config.Int], keeping the error.
func (r *ConfigReader) Int(key string) int { n, err := r.c.Int(key); return keep(r, n, err) }

// Int64 is [Config.Int64], keeping the error.
func (r *ConfigReader) Int64(key string) int64 { n, err := r.c.Int64(key); return keep(r, n, err) }

// Float64 is [Config.Float64], keeping the error.
func (r *ConfigReader) Float64(key string) float64 {
	n, err := r.c.Float64(key)
	return keep(r, n, err)
}

// Bool is [Config.Bool], keeping the error.
func (r *ConfigReader) Bool(key string) bool { b, err := r.c.Bool(key); return keep(r, b, err) }

// Duration is [Config.Duration], keeping the error.
func (r *ConfigReader) Duration(key string) time.Duration {
	d, err := r.c.Duration(key)
	return keep(r, d, err)
}

// Err returns every error kept so far, joined ([errors.Join]; each is a
// [ConfigError] naming its key), or nil.
func (r *ConfigReader) Err() error { return errors.Join(r.errs...) }
