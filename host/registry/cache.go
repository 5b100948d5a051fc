package registry

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/floehq/floe/sdk/client"
)

// CacheFile is the describe cache's name in the cache folder.
const CacheFile = "plugins.json"

// cacheVersion changes when the file's shape does; other versions are
// ignored and rewritten.
const cacheVersion = 1

// cacheDoc is plugins.json: what each binary, by SHA-256, declared.
type cacheDoc struct {
	Version  int                    `json:"version"`
	Binaries map[string]cachedEntry `json:"binaries"`
}

type cachedEntry struct {
	// Path is where the binary was last seen, for people reading the file.
	Path       string             `json:"path"`
	Components []client.Component `json:"components"`
}

// cache is the describe cache of one scan. A nil or empty-dir cache
// answers nothing and saves nothing.
type cache struct {
	dir  string
	prev map[string]cachedEntry
}

func loadCache(dir string, logger *slog.Logger) *cache {
	c := &cache{dir: dir, prev: map[string]cachedEntry{}}
	if dir == "" {
		return c
	}
	data, err := os.ReadFile(filepath.Join(dir, CacheFile))
	if errors.Is(err, fs.ErrNotExist) {
		return c
	}
	if err != nil {
		logger.Warn("plugin cache unreadable; describing every plugin", "path", filepath.Join(dir, CacheFile), "error", err)
		return c
	}
	var doc cacheDoc
	if err := json.Unmarshal(data, &doc); err != nil || doc.Version != cacheVersion {
		logger.Warn("plugin cache is stale or damaged; describing every plugin", "path", filepath.Join(dir, CacheFile), "error", err)
		return c
	}
	if doc.Binaries != nil {
		c.prev = doc.Binaries
	}
	return c
}

func (c *cache) lookup(sum []byte) ([]client.Component, bool) {
	e, ok := c.prev[hexSum(sum)]
	if !ok || len(e.Components) == 0 {
		return nil, false
	}
	return e.Components, true
}

// save writes what this scan found (and nothing older), atomically.
func (c *cache) save(bins []binary, logger *slog.Logger) {
	if c.dir == "" {
		return
	}
	doc := cacheDoc{Version: cacheVersion, Binaries: map[string]cachedEntry{}}
	for _, b := range bins {
		doc.Binaries[hexSum(b.checksum)] = cachedEntry{Path: b.path, Components: b.components}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err == nil {
		err = writeAtomic(filepath.Join(c.dir, CacheFile), data)
	}
	if err != nil {
		logger.Warn("cannot write the plugin cache; the next start describes every plugin again", "dir", c.dir, "error", err)
	}
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plugins-*.json")
	if err != nil {
		return err
	}
	// After the rename the temporary name is gone and Remove fails: that
	// is the path that worked.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
