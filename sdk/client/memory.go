package client

import "github.com/floehq/floe/sdk/internal/procmem"

// ReleaseStartupPages drops from this process, in the background now, a
// few seconds and a minute from now, the resident pages of the running
// binary's code and read-only data: start-up touched most of them once,
// the steady state needs few, and the kernel maps those back from its
// page cache. The floe host calls it once its worker runs; plugins built
// with the SDK do the same when they serve (docs/architecture.md,
// "Memory").
func ReleaseStartupPages() { procmem.Release() }
