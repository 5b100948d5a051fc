//go:build linux

package procmem

import (
	"strings"
	"testing"
)

// TestReleasableSkipsRelocatedPages: of the executable's mappings only
// the read-only ones without copied-on-write pages are released; the
// RELRO segment (read-only now, but written by the loader) and writable
// data are kept, and so is every other file.
func TestReleasableSkipsRelocatedPages(t *testing.T) {
	const smaps = `00400000-00405000 r--p 00000000 08:01 42 /bin/floe
Size:                 20 kB
Anonymous:             0 kB
00405000-03fa1000 r-xp 00005000 08:01 42 /bin/floe
Size:              60000 kB
Anonymous:             0 kB
07b30000-07bb4000 r--p 07730000 08:01 42 /bin/floe
Size:                528 kB
Anonymous:           528 kB
07bb4000-07d95000 rw-p 077b4000 08:01 42 /bin/floe
Size:               1924 kB
Anonymous:           300 kB
7f0000000000-7f0000001000 r--p 00000000 08:01 7 /usr/lib/libc.so.6
Size:                  4 kB
Anonymous:             0 kB
7f0000002000-7f0000003000 r--p 00000000 00:00 0
Anonymous:             0 kB
`
	got, err := releasable(strings.NewReader(smaps), "/bin/floe")
	if err != nil {
		t.Fatal(err)
	}
	want := []span{{0x400000, 0x405000}, {0x405000, 0x3fa1000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("releasable: %x, want %x (code and clean read-only data only)", got, want)
	}
}
