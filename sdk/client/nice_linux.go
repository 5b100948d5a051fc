//go:build linux

package client

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// setNice sets the niceness of every thread of a process. On Linux a
// niceness belongs to a thread: setpriority on the pid alone reaches only
// the main thread, while a Go plugin has already started its scheduler's
// threads by the time it answers the handshake, and it is those that run
// its work. A thread started later inherits its creator's niceness, so
// once every thread has it (a second pass catches threads started during
// the first), the whole process keeps it.
func setNice(pid, nice int) error {
	done := map[int]bool{}
	for range 3 {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}
