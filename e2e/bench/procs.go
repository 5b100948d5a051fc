package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux this runs on (it is fixed by the kernel ABI on x86 and arm).
const clockTicks = 100

// ProcSample is one reading of a process.
type ProcSample struct {
	PID  int
	Name string // executable's basename
	// RSSKB and HWMKB are VmRSS and VmHWM (peak RSS) of /proc/<pid>/status.
	RSSKB, HWMKB int64
	// AnonKB is RssAnon + RssShmem: the process's own memory, without the
	// pages of its binary and other files it maps (RssFile), which the
	// kernel can drop and read again. PeakAnonKB is the largest AnonKB
	// a ProcWatch saw.
	AnonKB, PeakAnonKB int64
	// AtPeakRSSKB and AtPeakAnonKB are VmRSS and AnonKB in the sample
	// whose summed RSS was the largest (PeakSumKB): what each process
	// held at the moment the whole peaked, its binary's pages
	// (RSS - anon) included.
	AtPeakRSSKB, AtPeakAnonKB int64
	// CPU is user + system time so far.
	CPU time.Duration
}

// ReadProc reads a process's name, memory and CPU time from /proc.
func ReadProc(pid int) (ProcSample, error) {
	s := ProcSample{PID: pid}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(stat[i+2:]))
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return s, fmt.Errorf("process %d is a zombie", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.CPU = time.Duration(ut+st) * time.Second / clockTicks
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		s.Name = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	} else {
		s.Name = string(stat[bytes.IndexByte(stat, '(')+1 : i])
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS":
			s.RSSKB = parseKB(v)
		case "VmHWM":
			s.HWMKB = parseKB(v)
		case "RssAnon", "RssShmem":
			s.AnonKB += parseKB(v)
		}
	}
	return s, nil
}

func parseKB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n
}

// Children returns the pids whose parent is pid.
func Children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		f := strings.Fields(string(b[i+2:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			out = append(out, p)
		}
	}
	return out
}

// ProcWatch samples a process and its children (floe and its plugin
// processes) every interval: the peak of their summed RSS, each one's
// peak RSS (VmHWM) and CPU time. Safe for concurrent use.
type ProcWatch struct {
	root     int
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	peakSum int64
	// peakAnon is the largest summed AnonKB.
	peakAnon int64
	// peakAt is when the summed RSS peaked, from the watch's start.
	peakAt  time.Duration
	procs   map[int]ProcSample // latest reading of every process seen
	samples int
}

// WatchProcs starts sampling root and its children every interval.
func WatchProcs(root int, interval time.Duration) *ProcWatch {
	w := &ProcWatch{root: root, interval: interval, stop: make(chan struct{}), done: make(chan struct{}), procs: map[int]ProcSample{}}
	go w.run()
	return w
}

func (w *ProcWatch) run() {
	defer close(w.done)
	var pids []int
	start, lastList := time.Now(), time.Time{}
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		if time.Since(lastList) >= 2*time.Second || len(pids) == 0 {
			pids = append([]int{w.root}, Children(w.root)...)
			lastList = time.Now()
		}
		var sum, anon int64
		read := map[int]bool{}
		w.mu.Lock()
		for _, pid := range pids {
			s, err := ReadProc(pid)
			if err != nil {
				continue
			}
			sum += s.RSSKB
			anon += s.AnonKB
			prev := w.procs[pid]
			s.PeakAnonKB = max(s.AnonKB, prev.PeakAnonKB)
			s.AtPeakRSSKB, s.AtPeakAnonKB = prev.AtPeakRSSKB, prev.AtPeakAnonKB
			w.procs[pid] = s
			read[pid] = true
		}
		if sum > w.peakSum {
			w.peakSum, w.peakAt = sum, time.Since(start)
			for pid, s := range w.procs {
				s.AtPeakRSSKB, s.AtPeakAnonKB = 0, 0
				if read[pid] {
					s.AtPeakRSSKB, s.AtPeakAnonKB = s.RSSKB, s.AnonKB
				}
				w.procs[pid] = s
			}
		}
		w.peakAnon = max(w.peakAnon, anon)
		w.samples++
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// Stop ends sampling.
func (w *ProcWatch) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// PeakSumKB is the largest summed RSS seen.
func (w *ProcWatch) PeakSumKB() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peakSum
}

// PeakAt is when the summed RSS peaked, counted from the watch's start.
func (w *ProcWatch) PeakAt() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peakAt
}

// PeakAnonSumKB is the largest summed AnonKB seen: the processes' own
// memory without the file pages they map.
func (w *ProcWatch) PeakAnonSumKB() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peakAnon
}

// Procs returns the latest reading of every process seen, by pid.
func (w *ProcWatch) Procs() []ProcSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]ProcSample, 0, len(w.procs))
	for _, s := range w.procs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ProcSample) int { return a.PID - b.PID })
	return out
}

// CPU returns the CPU time so far of every process seen, by pid.
func (w *ProcWatch) CPU() map[int]ProcSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int]ProcSample, len(w.procs))
	for pid, s := range w.procs {
		out[pid] = s
	}
	return out
}

// CPUDelta sums, per process name, the CPU time between two CPU()
// readings (processes absent from from count from zero: they started in
// between).
func CPUDelta(from, to map[int]ProcSample) map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid, s := range to {
		d := s.CPU
		if f, ok := from[pid]; ok {
			d -= f.CPU
		}
		out[s.Name] += d
	}
	return out
}

// SelfCPU is this process's user + system CPU time so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ShortName drops the floe-plugin- prefix of a plugin binary's name.
func ShortName(name string) string { return strings.TrimPrefix(name, "floe-plugin-") }

// LoadAvg is the machine's 1, 5 and 15 minute load averages
// (/proc/loadavg), "?" when unreadable: on a shared machine, the other
// sessions' share of the figures.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
