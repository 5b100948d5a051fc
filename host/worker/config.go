package worker

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/host/compat"
	"github.com/floehq/floe/host/providers"
	"github.com/floehq/floe/host/runtime"
)

// Worker config keys (a flat JSON object of strings, as Connect's worker
// properties are).
const (
	KeyListeners       = "listeners"
	KeyPluginPath      = "plugin.path"
	KeyDataDir         = "data.dir"
	KeyConfigDir       = "config.dir"
	KeyWorkerID        = "worker.id"
	KeyLogLevel        = "log.level"
	KeyShutdownTimeout = "task.shutdown.graceful.timeout.ms"
	// KeyPluginTLS turns go-plugin's AutoMTLS on for the connections to
	// plugin processes (docs/architecture.md, "Plugin transport").
	KeyPluginTLS = "plugin.transport.tls"
	// KeyPluginSharedMemory moves batches between plugin processes in
	// sealed memory files (docs/architecture.md, "Batches in shared
	// memory").
	KeyPluginSharedMemory = "plugin.transport.shared.memory"
	// KeyMemoryMaxBytes bounds what floe and its plugin processes hold
	// (docs/architecture.md, "Memory").
	KeyMemoryMaxBytes = "memory.max.bytes"
	// The REST API's safety settings (docs/security.md): PEM certificate
	// and key of https listeners (named after Connect's
	// listeners.https.ssl.*), and the files of accepted credentials.
	KeyTLSCert        = "listeners.https.ssl.certificate.location"
	KeyTLSKey         = "listeners.https.ssl.key.location"
	KeyRESTBasicFile  = "rest.auth.basic.credentials.file"
	KeyRESTBearerFile = "rest.auth.bearer.tokens.file"
)

// Defaults of the worker config.
const (
	DefaultListeners       = "http://127.0.0.1:8083"
	DefaultPluginPath      = "bin/plugins"
	DefaultDataDir         = "./data"
	DefaultLogLevel        = "info"
	DefaultShutdownTimeout = 60 * time.Second
	// DefaultPluginTLS: plugin processes are floe's own children on Unix
	// sockets only floe's user may reach; encrypting them bought nothing
	// and cost CPU (docs/architecture.md, "Plugin transport").
	DefaultPluginTLS = false
	// DefaultPluginSharedMemory: batches skip the host's copies.
	DefaultPluginSharedMemory = true
	// DefaultMemoryMaxBytes is memory.max.bytes when unset.
	DefaultMemoryMaxBytes = 512 << 20
)

// workerKeys lists every accepted key, for the unknown-key check.
func workerKeys() []string {
	return []string{KeyListeners, KeyPluginPath, KeyDataDir, KeyConfigDir, KeyWorkerID, KeyLogLevel, KeyShutdownTimeout,
		KeyPluginTLS, KeyPluginSharedMemory, KeyMemoryMaxBytes, KeyTLSCert, KeyTLSKey, KeyRESTBasicFile, KeyRESTBearerFile}
}

// Config is a worker's config.
type Config struct {
	// File is where the config came from ("" when built in code).
	File string
	// Listeners are the REST API's URLs (listeners).
	Listeners []string
	// PluginPath lists the folders scanned for plugin binaries.
	PluginPath []string
	// DataDir holds the worker's state, the embedded catalog and warehouse.
	DataDir string
	// ConfigDir is an optional folder of connector JSON files that the
	// CLI watches; the worker itself only carries the setting.
	ConfigDir string
	// WorkerID names this worker in statuses (default: the first
	// listener's host:port).
	WorkerID string
	// LogLevel is trace, debug, info, warn or error.
	LogLevel string
	// ShutdownTimeout bounds the final checkpoints at shutdown
	// (task.shutdown.graceful.timeout.ms).
	ShutdownTimeout time.Duration
	// PluginTLS wraps the gRPC connections to plugin processes in
	// go-plugin's AutoMTLS (plugin.transport.tls).
	PluginTLS bool
	// PluginSharedMemory moves batches from sources to sinks in sealed
	// memory files, only handles through the host
	// (plugin.transport.shared.memory).
	PluginSharedMemory bool
	// MemoryMaxBytes bounds what the worker and its plugin processes hold
	// (memory.max.bytes); 0 sets no bound.
	MemoryMaxBytes int64
	// TLSCert and TLSKey are the PEM files of https listeners.
	TLSCert, TLSKey string
	// RESTBasicFile holds the REST API's users ("user: password" lines)
	// and RESTBearerFile its bearer tokens; either turns authentication
	// on.
	RESTBasicFile, RESTBearerFile string
	// Providers resolves the config provider references of connector
	// configs (config.providers; see package providers).
	Providers providers.Set
	// ConnectorDefaults holds the keys connectors inherit, as a Kafka
	// Connect worker's connectors do: bootstrap.servers and the
	// converters (key.converter, value.converter, header.converter and
	// their settings). See [compat.Translate].
	ConnectorDefaults map[string]string
}

// LoadConfig reads a worker config file. Errors name the file and the key.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w (give the path of a worker config, for example configs/worker.json)", path, err)
	}
	return ParseConfig(data, path)
}

// ParseConfig reads a worker config from JSON; file names it in errors.
// Missing keys take their defaults; unknown keys are an error naming the
// key and the file, with the closest known key.
func ParseConfig(data []byte, file string) (Config, error) {
	if file == "" {
		file = "(inline)"
	}
	var raw map[string]string
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w (the worker config is a flat JSON object of string values)", file, err)
	}
	return ConfigFromMap(raw, file)
}

// ConfigFromMap builds a Config from key-value pairs, as ParseConfig does.
func ConfigFromMap(raw map[string]string, file string) (Config, error) {
	keys := slices.Sorted(maps.Keys(raw))
	known := workerKeys()
	for _, k := range keys {
		if !slices.Contains(known, k) && !compat.WorkerKey(k) && !providers.WorkerKey(k) {
			msg := fmt.Sprintf("worker config %s: unknown key %q", file, k)
			if s := closest(k, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return Config{}, fmt.Errorf("%s (known keys: %s, and bootstrap.servers and the converters connectors inherit)", msg, strings.Join(known, ", "))
		}
	}
	get := func(k, def string) string {
		if v := strings.TrimSpace(raw[k]); v != "" {
			return v
		}
		return def
	}
	c := Config{
		File:               file,
		Listeners:          splitList(get(KeyListeners, DefaultListeners)),
		PluginPath:         splitList(get(KeyPluginPath, DefaultPluginPath)),
		DataDir:            get(KeyDataDir, DefaultDataDir),
		ConfigDir:          get(KeyConfigDir, ""),
		LogLevel:           strings.ToLower(get(KeyLogLevel, DefaultLogLevel)),
		ShutdownTimeout:    DefaultShutdownTimeout,
		PluginTLS:          DefaultPluginTLS,
		PluginSharedMemory: DefaultPluginSharedMemory,
		MemoryMaxBytes:     DefaultMemoryMaxBytes,
		TLSCert:            get(KeyTLSCert, ""),
		TLSKey:             get(KeyTLSKey, ""),
		RESTBasicFile:      get(KeyRESTBasicFile, ""),
		RESTBearerFile:     get(KeyRESTBearerFile, ""),
	}
	ps, err := providers.FromWorkerConfig(raw)
	if err != nil {
		return Config{}, fmt.Errorf("worker config %s: %w", file, err)
	}
	c.Providers = ps
	for k, v := range raw {
		if compat.WorkerKey(k) {
			if c.ConnectorDefaults == nil {
				c.ConnectorDefaults = map[string]string{}
			}
			c.ConnectorDefaults[k] = v
		}
	}
	for _, l := range c.Listeners {
		u, err := url.Parse(l)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, fmt.Errorf("worker config %s: %s: %q is not a listener URL like http://127.0.0.1:8083", file, KeyListeners, l)
		}
		if u.Scheme == "https" && (c.TLSCert == "" || c.TLSKey == "") {
			return Config{}, fmt.Errorf("worker config %s: %s: %q is https: set %s and %s (PEM files)", file, KeyListeners, l, KeyTLSCert, KeyTLSKey)
		}
	}
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		return Config{}, fmt.Errorf("worker config %s: %s: %q is not one of trace, debug, info, warn, error", file, KeyLogLevel, c.LogLevel)
	}
	if v := strings.TrimSpace(raw[KeyShutdownTimeout]); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return Config{}, fmt.Errorf("worker config %s: %s: %q is not a positive number of milliseconds", file, KeyShutdownTimeout, v)
		}
		c.ShutdownTimeout = time.Duration(ms) * time.Millisecond
	}
	for key, dst := range map[string]*bool{KeyPluginTLS: &c.PluginTLS, KeyPluginSharedMemory: &c.PluginSharedMemory} {
		if v := strings.TrimSpace(raw[key]); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, fmt.Errorf("worker config %s: %s: %q is not true or false", file, key, v)
			}
			*dst = b
		}
	}
	if v := strings.TrimSpace(raw[KeyMemoryMaxBytes]); v != "" {
		if v == "0" {
			c.MemoryMaxBytes = 0
		} else {
			n, err := runtime.ParseBytes(v)
			if err != nil || n < 256<<20 {
				return Config{}, fmt.Errorf("worker config %s: %s: %q is not a size of at least 256MiB (bytes, or with KiB, MiB, GiB), or 0 for no bound", file, KeyMemoryMaxBytes, v)
			}
			c.MemoryMaxBytes = n
		}
	}
	// Plugins get the data dir in their config and may run elsewhere:
	// resolve it against floe's working directory once, here.
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return Config{}, fmt.Errorf("worker config %s: %s: %w", file, KeyDataDir, err)
	}
	c.DataDir = abs
	c.WorkerID = get(KeyWorkerID, "")
	if c.WorkerID == "" {
		u, _ := url.Parse(c.Listeners[0])
		c.WorkerID = u.Host
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
