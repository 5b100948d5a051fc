//go:build !linux

package client

import "os/exec"

// dieWithHost does nothing off Linux, which has no parent-death signal;
// plugins built on sdk.Serve still exit when they see their host gone.
func dieWithHost(*exec.Cmd) {}
