package sdk_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/floehq/floe/sdk"
)

func TestTransientAndPermanentMarks(t *testing.T) {
	base := fmt.Errorf("catalog: %w", syscall.ECONNREFUSED)
	tr := sdk.Transient(base)
	if tr.Error() != base.Error() || !errors.Is(tr, sdk.ErrTransient) || errors.Is(tr, sdk.ErrPermanent) || !errors.Is(tr, syscall.ECONNREFUSED) {
		t.Errorf("Transient(%v) = %v: want the same message, ErrTransient and the cause", base, tr)
	}
	var errno syscall.Errno
	if !errors.As(tr, &errno) || errno != syscall.ECONNREFUSED {
		t.Errorf("errors.As through Transient: %v", errno)
	}
	pm := sdk.Permanent(fs.ErrNotExist)
	if !errors.Is(pm, sdk.ErrPermanent) || errors.Is(pm, sdk.ErrTransient) || !errors.Is(pm, fs.ErrNotExist) {
		t.Errorf("Permanent(%v) = %v", fs.ErrNotExist, pm)
	}
	if sdk.Transient(nil) != nil || sdk.Permanent(nil) != nil {
		t.Error("a nil error must stay nil")
	}
	// Wrapping keeps the mark.
	if w := fmt.Errorf("commit: %w", tr); !errors.Is(w, sdk.ErrTransient) {
		t.Errorf("%v lost the mark", w)
	}
}

// A plugin marks an error whose cause is expected to pass (the host
// retries it without counting it as the plugin's fault) or one a human must
// fix (the task fails at once and is not restarted).
func ExampleTransient() {
	err := sdk.Transient(fmt.Errorf("iceberg sink: table db.t: commit: %w", syscall.ECONNREFUSED))
	fmt.Println(errors.Is(err, sdk.ErrTransient), err)
	// Output: true iceberg sink: table db.t: commit: connection refused
}
