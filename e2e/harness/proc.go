package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runMarkerEnv is set in the environment of every floe process the
// harness starts; floe passes its environment on to its plugins, so the
// marker finds them all, whoever their parent is now.
const runMarkerEnv = "FLOE_E2E_RUN"

// Proc is a process found through /proc.
type Proc struct {
	PID, PPID int
	// Name is the basename of the executable (floe, floe-plugin-iceberg).
	Name string
	// State is the state letter of /proc/<pid>/stat (R, S, Z, …).
	State byte
	// start is the process's start time in clock ticks since boot; with
	// PID it names the process across PID reuse.
	start uint64
}

func (p Proc) String() string {
	return fmt.Sprintf("%s (pid %d, ppid %d, state %c)", p.Name, p.PID, p.PPID, p.State)
}

// alive reports whether p still runs: the same process (PID and start
// time) exists and is not a zombie. This sandbox's pid 1 does not reap
// orphans, so a dead orphan stays a zombie.
func (p Proc) alive() bool {
	q, err := readProc(p.PID)
	if err != nil || q.start != p.start {
		return false
	}
	return q.State != 'Z' && q.State != 'X'
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (Proc, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, err
	}
	// pid (comm) state ppid … starttime is field 22; comm may hold spaces
	// and parentheses, so split after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return Proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	p := Proc{PID: pid, State: f[0][0]}
	p.PPID, _ = strconv.Atoi(f[1])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		p.Name = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	} else {
		p.Name = string(b[bytes.IndexByte(b, '(')+1 : i])
	}
	return p, nil
}

// markedProcs lists the live processes whose environment holds
// FLOE_E2E_RUN=<run>.
func markedProcs(run string) []Proc {
	want := []byte(runMarkerEnv + "=" + run + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		p, err := readProc(pid)
		if err != nil || p.State == 'Z' || p.State == 'X' {
			continue
		}
		out = append(out, p)
	}
	return out
}

// waitGone waits until none of procs is alive or timeout passes, and
// returns the survivors.
func waitGone(procs []Proc, timeout time.Duration) []Proc {
	deadline := time.Now().Add(timeout)
	for {
		var alive []Proc
		for _, p := range procs {
			if p.alive() {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killProcs sends SIGKILL to every process of procs still alive.
func killProcs(procs []Proc) {
	for _, p := range procs {
		if p.alive() {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}
