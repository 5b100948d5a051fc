//go:build unix

package generate_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time so far (user + system). Benchmarks
// report records per CPU-second beside records per wall-second: on a
// shared machine the wall clock also counts other processes' turns.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
