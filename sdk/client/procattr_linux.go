//go:build linux

package client

import (
	"os/exec"
	"syscall"
)

// dieWithHost asks the kernel to send the plugin SIGTERM when the floe
// host dies (PR_SET_PDEATHSIG), however it dies. sdk.Serve also watches
// its parent, but a plugin written without it (in another language, say)
// would otherwise live on as an orphan, holding what its tasks hold.
//
// The kernel sends the signal when the thread that started the process
// exits, not only the whole host: floe never starts plugins from a
// goroutine locked to its thread (runtime.LockOSThread), whose thread
// could exit early.
func dieWithHost(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
