package kclienttest

import (
	"fmt"
	"strings"
	"testing"
)

type fakeT struct{ skipped, failed string }

func (f *fakeT) Helper()                           {}
func (f *fakeT) Skip(args ...any)                  { f.skipped = fmt.Sprint(args...) }
func (f *fakeT) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestUnavailable(t *testing.T) {
	t.Setenv(RequireEnv, "")
	var f fakeT
	Unavailable(&f, "needs a broker")
	if f.failed != "" || !strings.Contains(f.skipped, "this test needs a broker") {
		t.Errorf("without %s: skipped %q, failed %q; want a skip", RequireEnv, f.skipped, f.failed)
	}
	t.Setenv(RequireEnv, "1")
	f = fakeT{}
	Unavailable(&f, "needs a broker")
	if f.skipped != "" || !strings.Contains(f.failed, "FLOE_REQUIRE_SERVICES=1 but this test needs a broker") {
		t.Errorf("with %s=1: skipped %q, failed %q; want a failure", RequireEnv, f.skipped, f.failed)
	}
}
