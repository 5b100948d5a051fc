package sdk

import (
	"maps"
	"strconv"
	"strings"
	"time"
)

// Config is a connector's config as one component sees it: every key of the
// connector, with the component's defaults filled in. Values were validated
// against the component's [Spec] before Open, so the typed getters return
// the zero value only for absent keys.
type Config struct {
	values map[string]string
}

// NewConfig wraps a plain map, without defaults. Tests use it.
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

// Int returns the value of key as an int, or 0.
func (c Config) Int(key string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(c.values[key]))
	return n
}

// Int64 returns the value of key as an int64, or 0.
func (c Config) Int64(key string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(c.values[key]), 10, 64)
	return n
}

// Float64 returns the value of key as a float64, or 0.
func (c Config) Float64(key string) float64 {
	n, _ := strconv.ParseFloat(strings.TrimSpace(c.values[key]), 64)
	return n
}

// Bool returns the value of key as a bool, or false.
func (c Config) Bool(key string) bool {
	b, _ := strconv.ParseBool(strings.TrimSpace(c.values[key]))
	return b
}

// Duration returns the value of key as a duration ("10s" or milliseconds).
func (c Config) Duration(key string) time.Duration {
	d, _ := ParseDuration(c.values[key])
	return d
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
