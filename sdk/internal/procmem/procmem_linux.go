//go:build linux

package procmem

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleaseNow drops the resident pages of the running executable's
// read-only mappings (code, read-only data) from this process and returns
// how many bytes of mappings it advised.
func ReleaseNow() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	spans, err := releasable(f, exe)
	if err != nil {
		return 0, err
	}
	var advised int64
	for _, s := range spans {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(s.lo), uintptr(s.hi-s.lo), unix.MADV_DONTNEED); errno != 0 {
			return advised, fmt.Errorf("procmem: madvise %x-%x: %w", s.lo, s.hi, errno)
		}
		advised += int64(s.hi - s.lo)
	}
	return advised, nil
}

// span is one mapping's address range.
type span struct{ lo, hi uint64 }

// releasable reads /proc/<pid>/smaps and returns the mappings of exe
// whose pages are all clean copies of the file: not writable, and without
// anonymous (copied-on-write) pages. The second rule keeps out the RELRO
// segment of a dynamically linked (cgo) binary: the loader wrote its
// relocations there before making it read-only, so dropping its pages
// would read back the unrelocated file and crash the process at its next
// call through the GOT.
func releasable(smaps io.Reader, exe string) ([]span, error) {
	var out []span
	var cur *span
	keep := false
	flush := func() {
		if cur != nil && keep {
			out = append(out, *cur)
		}
		cur, keep = nil, false
	}
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: start-end perms offset dev inode [path].
			flush()
			start, end, _ := strings.Cut(fields[0], "-")
			lo, err1 := strconv.ParseUint(start, 16, 64)
			hi, err2 := strconv.ParseUint(end, 16, 64)
			if err1 != nil || err2 != nil || hi <= lo {
				continue
			}
			cur = &span{lo, hi}
			keep = len(fields) >= 6 && fields[5] == exe && !strings.Contains(fields[1], "w")
			continue
		}
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok && cur != nil {
			if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err != nil || kb != 0 {
				keep = false
			}
		}
	}
	flush()
	return out, sc.Err()
}
