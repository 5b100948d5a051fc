package bench

import (
	"path/filepath"
	"strings"
)

// NeutralPath is path as a results file prints it, so that results name
// no machine's folders: relative to the repository repo when inside it
// (bench-results/perf-datagen-….data), else ".../" and its file name.
// Relative paths are kept.
func NeutralPath(repo, path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	if repo != "" {
		if rel, err := filepath.Rel(repo, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return rel
		}
	}
	return ".../" + filepath.Base(path)
}

// NeutralArgs is args with each absolute path made neutral ([NeutralPath]),
// alone or as a flag's value (-out=/tmp/x.md).
func NeutralArgs(repo string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if flag, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(flag, "-") && filepath.IsAbs(value) {
			out[i] = flag + "=" + NeutralPath(repo, value)
			continue
		}
		out[i] = NeutralPath(repo, a)
	}
	return out
}
