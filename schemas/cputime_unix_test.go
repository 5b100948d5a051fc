//go:build unix

package schemas

import (
	"syscall"
	"time"
)

// processCPU returns the user+system CPU time of this process, so
// benchmarks can report throughput per CPU-second, which a busy shared
// machine distorts less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
