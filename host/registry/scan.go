package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/sdk/client"
)

// Prefix is how every plugin binary's name starts.
const Prefix = "floe-plugin-"

// describeTimeout bounds starting and asking one binary.
const describeTimeout = 30 * time.Second

// describeParallel is how many binaries are asked at once.
const describeParallel = 4

// ignoredExt are files next to plugins that are not plugins (checksums,
// signatures, docs).
var ignoredExt = []string{".md", ".txt", ".json", ".yaml", ".yml", ".sha256", ".sha512", ".sig", ".asc", ".pem", ".log", ".gz", ".zip", ".tar", ".tgz"}

// binary is one plugin file and what it declared.
type binary struct {
	path       string
	checksum   []byte
	components []client.Component
}

// Scan finds the executables named floe-plugin-* in each folder of dirs
// (and one level of subfolders), and asks each which components it offers:
// by starting it and calling Describe, unless cacheDir's plugins.json has
// the answer for its checksum already. cacheDir "" disables the cache.
//
// It returns a registry of everything usable and a problem for every file
// it could not use; it does not fail as a whole. Binaries are indexed in
// the order of dirs, then by name, which decides who wins a duplicate
// component name. ctx bounds the whole scan. logger may be nil.
func Scan(ctx context.Context, dirs []string, cacheDir string, logger *slog.Logger) (*Registry, []Problem) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	paths, problems := find(dirs)
	c := loadCache(cacheDir, logger)

	bins := make([]binary, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, describeParallel)
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			bins[i], errs[i] = inspect(ctx, path, c, logger)
		})
	}
	wg.Wait()

	var ok []binary
	for i := range paths {
		if errs[i] != nil {
			problems = append(problems, Problem{Path: paths[i], Err: errs[i]})
			continue
		}
		ok = append(ok, bins[i])
	}
	c.save(ok, logger)
	r, dups := build(ok)
	problems = append(problems, dups...)
	for _, p := range problems {
		logger.Warn("plugin problem", "path", p.Path, "error", p.Err)
	}
	logger.Debug("plugins scanned", "binaries", len(ok), "components", len(r.entries), "problems", len(problems))
	return r, problems
}

// find lists the candidate files in dirs, in order, without duplicates.
func find(dirs []string) ([]string, []Problem) {
	var out []string
	var problems []Problem
	seen := map[string]bool{}
	add := func(path string) {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if !seen[path] {
			seen[path] = true
			out = append(out, path)
		}
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("plugin folder %s does not exist; create it or fix plugin.path", dir)
			} else {
				err = fmt.Errorf("plugin folder %s: %w", dir, err)
			}
			problems = append(problems, Problem{Path: dir, Err: err})
			continue
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			if isDir(path) {
				sub, err := os.ReadDir(path)
				if err != nil {
					problems = append(problems, Problem{Path: path, Err: fmt.Errorf("plugin subfolder %s: %w", path, err)})
					continue
				}
				for _, s := range sub {
					if p := filepath.Join(path, s.Name()); candidate(s.Name()) && !isDir(p) {
						add(p)
					}
				}
				continue
			}
			if candidate(e.Name()) {
				add(path)
			}
		}
	}
	return out, problems
}

func candidate(name string) bool {
	if !strings.HasPrefix(name, Prefix) || len(name) == len(Prefix) {
		return false
	}
	ext := strings.ToLower(filepath.Ext(name))
	return !slices.Contains(ignoredExt, ext)
}

func isDir(path string) bool {
	fi, err := os.Stat(path) // follows symlinks
	return err == nil && fi.IsDir()
}

// inspect checksums one binary and learns its components, from the cache
// or by asking it.
func inspect(ctx context.Context, path string, c *cache, logger *slog.Logger) (binary, error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return binary{}, fmt.Errorf("plugin %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return binary{}, fmt.Errorf("plugin %s is not a regular file", path)
	case fi.Mode().Perm()&0o111 == 0:
		return binary{}, fmt.Errorf("plugin %s is not executable; run chmod +x %s", path, path)
	}
	sum, err := checksum(path)
	if err != nil {
		return binary{}, fmt.Errorf("plugin %s: checksum: %w", path, err)
	}
	b := binary{path: path, checksum: sum}
	if comps, ok := c.lookup(sum); ok {
		b.components = comps
		return b, nil
	}
	dctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	start := time.Now()
	p, err := client.Start(dctx, client.StartOptions{Path: path, Checksum: sum})
	if err != nil {
		return binary{}, err
	}
	defer p.Kill()
	comps, err := p.Describe(dctx)
	if err != nil {
		return binary{}, fmt.Errorf("plugin %s: describe: %w", path, err)
	}
	if len(comps) == 0 {
		return binary{}, fmt.Errorf("plugin %s declares no components; its main must pass at least one to sdk.Serve", path)
	}
	logger.Debug("plugin described", "path", path, "components", len(comps), "took", time.Since(start))
	b.components = comps
	return b, nil
}

func checksum(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: closing loses nothing
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func hexSum(sum []byte) string { return hex.EncodeToString(sum) }
