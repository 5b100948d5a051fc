package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNeutralPaths: results files named the folders of the machine they
// ran on (/work/main/bench-results/perf-….data, -out /tmp/exp/A.md).
func TestNeutralPaths(t *testing.T) {
	for path, want := range map[string]string{
		"/work/main/bench-results/perf-datagen-1.data": "bench-results/perf-datagen-1.data",
		"/tmp/exp/A-full.md":                           ".../A-full.md",
		"/work/mainly/x.md":                            ".../x.md",
		"bench-results/2026-12-02.md":                  "bench-results/2026-12-02.md",
	} {
		if got := NeutralPath("/work/main", path); got != want {
			t.Errorf("NeutralPath(%q) = %q, want %q", path, got, want)
		}
	}
	got := strings.Join(NeutralArgs("/work/main", []string{"--quick", "-out", "/tmp/lake-bench.md", "--out=/work/main/r.md", "-maint-config", "a=1,b=2", "lake"}), " ")
	if want := "--quick -out .../lake-bench.md --out=r.md -maint-config a=1,b=2 lake"; got != want {
		t.Errorf("NeutralArgs = %q, want %q", got, want)
	}
}

// TestResultsNameNoMachinePaths holds the committed results to it.
func TestResultsNameNoMachinePaths(t *testing.T) {
	files, err := filepath.Glob("../../bench-results/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no results files: %v", err)
	}
	machine := regexp.MustCompile("(^|[\\s`(=])/(work|root|home|tmp|Users|var|private)/")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if machine.MatchString(line) {
				t.Errorf("%s:%d names a folder of the machine it ran on: %s", filepath.Base(f), i+1, line)
			}
		}
	}
}
