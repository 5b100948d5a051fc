package providers

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Worker config keys.
const (
	KeyProviders = "config.providers"
	prefixKey    = "config.providers."
)

// Connect's provider classes, and the kinds floe implements them as.
var classes = map[string]string{
	"org.apache.kafka.common.config.provider.FileConfigProvider":      "file",
	"org.apache.kafka.common.config.provider.EnvVarConfigProvider":    "env",
	"org.apache.kafka.common.config.provider.DirectoryConfigProvider": "directory",
}

// WorkerKey reports whether a worker config key declares providers.
func WorkerKey(k string) bool { return k == KeyProviders || strings.HasPrefix(k, prefixKey) }

// Set is the providers a worker declares: name → kind (file, env,
// directory). The zero Set resolves nothing.
type Set struct {
	kinds map[string]string
}

// FromWorkerConfig reads config.providers and config.providers.<name>.class
// from a worker config. Errors name the key.
func FromWorkerConfig(raw map[string]string) (Set, error) {
	s := Set{kinds: map[string]string{}}
	for _, name := range strings.Split(raw[KeyProviders], ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		classKey := prefixKey + name + ".class"
		class := strings.TrimSpace(raw[classKey])
		kind, ok := classes[class]
		switch {
		case class == "" && (name == "file" || name == "env" || name == "directory"):
			kind = name
		case class == "":
			return Set{}, fmt.Errorf("%s: provider %q has no class: set %s to one of %s", KeyProviders, name, classKey, strings.Join(slices.Sorted(maps.Keys(classes)), ", "))
		case !ok:
			return Set{}, fmt.Errorf("%s: %q is not a provider class floe implements (%s)", classKey, class, strings.Join(slices.Sorted(maps.Keys(classes)), ", "))
		}
		s.kinds[name] = kind
	}
	for k := range raw {
		if rest, ok := strings.CutPrefix(k, prefixKey); ok {
			name, _, _ := strings.Cut(rest, ".")
			if _, declared := s.kinds[name]; !declared {
				return Set{}, fmt.Errorf("%s: provider %q is not listed in %s", k, name, KeyProviders)
			}
		}
	}
	return s, nil
}

// reference is Connect's ${provider:[path:]key}.
var reference = regexp.MustCompile(`\$\{([^}:]*?):(?:([^}]*?):)?([^}]*?)\}`)

// Resolve returns config with every reference to a declared provider
// replaced by its value. errs maps a key to why a reference in its value
// could not be resolved; the message names the reference, never a value.
func (s Set) Resolve(config map[string]string) (out map[string]string, errs map[string]string) {
	out = make(map[string]string, len(config))
	errs = map[string]string{}
	for k, v := range config {
		if len(s.kinds) == 0 || !strings.Contains(v, "${") {
			out[k] = v
			continue
		}
		out[k] = reference.ReplaceAllStringFunc(v, func(ref string) string {
			m := reference.FindStringSubmatch(ref)
			kind, ok := s.kinds[m[1]]
			if !ok {
				return ref // not a provider of this worker: as in Connect
			}
			val, err := lookup(kind, m[2], m[3])
			if err != nil {
				errs[k] = fmt.Sprintf("config provider reference %s: %v", ref, err)
				return ref
			}
			return val
		})
	}
	return out, errs
}

func lookup(kind, path, key string) (string, error) {
	switch kind {
	case "env":
		if path != "" {
			key = path + ":" + key
		}
		v, ok := os.LookupEnv(key)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set in floe's environment", key)
		}
		return v, nil
	case "directory":
		if path == "" {
			return "", fmt.Errorf("give the directory: ${directory:/path:file}")
		}
		if key != filepath.Base(key) {
			return "", fmt.Errorf("%q is not a file name in %s", key, path)
		}
		b, err := os.ReadFile(filepath.Join(path, key))
		if err != nil {
			return "", err
		}
		return string(b), nil
	case "file":
		if path == "" {
			return "", fmt.Errorf("give the file: ${file:/path/file.properties:key}")
		}
		props, err := readProperties(path)
		if err != nil {
			return "", err
		}
		v, ok := props[key]
		if !ok {
			return "", fmt.Errorf("%s has no key %q", path, key)
		}
		return v, nil
	}
	return "", fmt.Errorf("unknown provider kind %s", kind)
}

// readProperties reads a Java properties file's key=value and key: value
// lines (# and ! comments); enough for secrets files.
func readProperties(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			out[line] = ""
			continue
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out, nil
}
