// Package procmem hands back to the kernel the pages of the running
// binary that only start-up needed.
//
// A floe binary is large (the host and the iceberg plugin link Arrow,
// Parquet, the Iceberg catalogs and cloud SDKs), and its start-up (Go's
// runtime, every package's init: protobuf descriptors, endpoint tables)
// touches most of its code and read-only data once. Those pages stay
// resident, counted in the process's RSS, although the steady state runs
// a small part of them: tens of MiB per process. Dropping them from the
// process's page tables costs nothing: they are clean copies of the file,
// and the kernel maps the few that are touched again back from its page
// cache (a minor fault each). Writable mappings are left alone.
package procmem

import "time"

// releaseAt is when, after Release is called, the pages are dropped: at
// once (Release is called once init is over, and a connector that starts
// with its worker ramps its buffers up within the next seconds, when
// start-up's pages made the process's peak), once the rest of start-up is
// over, and again once the first connector's tasks opened (their set-up
// code runs once too).
var releaseAt = []time.Duration{0, 5 * time.Second, time.Minute}

// Release drops the binary's read-only pages in the background: now, a
// few seconds and a minute from now. Errors are ignored: the process only
// keeps more memory resident.
func Release() {
	go func() {
		start := time.Now()
		for _, at := range releaseAt {
			time.Sleep(time.Until(start.Add(at)))
			_, _ = ReleaseNow()
		}
	}()
}
