//go:build unix && !linux

package client

import "syscall"

// setNice sets a process's niceness.
func setNice(pid, nice int) error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, pid, nice)
}
