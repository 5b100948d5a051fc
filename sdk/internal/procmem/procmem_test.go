package procmem

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func rssFileKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestReleaseNow: the test binary's read-only pages leave its RSS, and the
// process goes on running the code they held.
func TestReleaseNow(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	before := rssFileKB(t)
	advised, err := ReleaseNow()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if advised == 0 || after >= before {
		t.Errorf("advised %d bytes; RssFile %d kB -> %d kB, want it lower", advised, before, after)
	}
	// Code and data dropped are read back when used.
	if got := strconv.Itoa(12345); got != "12345" {
		t.Fatal("after the release the code misbehaves")
	}
	t.Logf("advised %d MiB; RssFile %d -> %d kB", advised>>20, before, after)
}
