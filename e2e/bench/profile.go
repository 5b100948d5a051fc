package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Profiling. floe has no pprof endpoint in the host or the plugins (no
// FLOE_PLUGIN_* setting for it either), so the benchmark samples the
// processes from outside with Linux perf, on binaries built without
// make build's -s -w so perf can name Go functions (Go keeps frame
// pointers, so call stacks work too).

// BuildUnstripped builds bin/floe and every plugin binary with symbols
// into dir (dir/floe, dir/plugins/floe-plugin-*), the layout
// harness.Env.BinDir expects.
func BuildUnstripped(ctx context.Context, repo, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o755); err != nil {
		return err
	}
	build := func(out, pkg string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = repo
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
		}
		return nil
	}
	if err := build(filepath.Join(dir, "floe"), "./host/cmd/floe"); err != nil {
		return err
	}
	cmds, err := filepath.Glob(filepath.Join(repo, "plugins", "*", "cmd", "floe-plugin-*"))
	if err != nil {
		return err
	}
	for _, c := range cmds {
		rel, _ := filepath.Rel(repo, c)
		if err := build(filepath.Join(dir, "plugins", filepath.Base(c)), "./"+rel); err != nil {
			return err
		}
	}
	return nil
}

// Perf samples pids' on-CPU stacks (cpu-clock, 499 Hz) for d into out.
func Perf(ctx context.Context, pids []int, d time.Duration, out string) error {
	if _, err := exec.LookPath("perf"); err != nil {
		return fmt.Errorf("perf is not installed (apt-get install linux-perf): %w", err)
	}
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = strconv.Itoa(p)
	}
	cmd := exec.CommandContext(ctx, "perf", "record", "-e", "cpu-clock", "-F", "499", "-g", "-o", out,
		"-p", strings.Join(ps, ","), "--", "sleep", strconv.Itoa(int(d.Seconds())))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("perf record: %w\n%s", err, b)
	}
	return nil
}

// PerfTop returns perf's flat profile of a recording: self time by
// process and function, entries of at least minPct of all samples.
func PerfTop(ctx context.Context, data string, minPct float64) (string, error) {
	cmd := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--no-children",
		"--sort", "comm,sym", "-g", "none", "--percent-limit", strconv.FormatFloat(minPct, 'f', 1, 64))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("perf report: %w\n%s", err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return strings.Join(lines, "\n"), nil
}

// perfBucket classifies a sampled function by the code it belongs to.
type perfBucket struct {
	name     string
	prefixes []string
}

// perfBuckets are checked in order; a function matching none is "other".
// Self time only, so the buckets are disjoint and add up to each
// process's samples; inclusive costs (Parquet encoding including its
// memmoves) need the perf data itself.
var perfBuckets = []perfBucket{
	{"zstd compression (klauspost/compress)", []string{"github.com/klauspost/compress/"}},
	{"Parquet encoding (arrow-go parquet)", []string{"github.com/apache/arrow-go/v18/parquet", "github.com/apache/iceberg-go/"}},
	{"Arrow IPC + flatbuffers", []string{"github.com/apache/arrow-go/v18/arrow/ipc", "github.com/google/flatbuffers/"}},
	{"Arrow compute / arrays / memory", []string{"github.com/apache/arrow-go/v18/"}},
	{"gRPC + HTTP/2", []string{"google.golang.org/grpc", "golang.org/x/net/http2"}},
	{"protobuf", []string{"google.golang.org/protobuf/"}},
	{"TLS + crypto (go-plugin AutoMTLS)", []string{"crypto/", "vendor/golang.org/x/crypto/"}},
	{"floe code (host, sdk, plugins, schemas)", []string{"github.com/floehq/floe/"}},
	{"librdkafka + confluent-kafka-go", []string{"rd_", "github.com/confluentinc/", "_cgo"}},
	{"Go GC", []string{"runtime.gc", "runtime.scan", "runtime.markBits", "runtime.greyobject", "runtime.findObject", "runtime.(*gcWork)", "runtime.(*mspan)", "runtime.wbBuf", "runtime.spanOf", "runtime.(*gcBits)", "runtime.heapBits", "runtime.typePointers", "runtime.(*mheap)", "runtime.sweepone", "runtime.bgsweep", "runtime.(*sweepLocked)"}},
	{"Go memmove / memclr / malloc", []string{"runtime.memmove", "runtime.memclr", "runtime.malloc", "runtime.(*mcache)", "runtime.(*mcentral)", "runtime.nextFreeFast", "runtime.growslice", "runtime.makeslice"}},
	{"Go scheduler + other runtime", []string{"runtime.", "internal/runtime/", "sync.", "internal/sync."}},
	{"Go standard library (other)", []string{"bufio.", "io.", "bytes.", "encoding/", "hash/", "net.", "internal/poll.", "syscall.", "os.", "strconv.", "slices.", "sort.", "math/", "time.", "reflect."}},
}

// PerfBreakdown renders, per process, the share of all perf samples each
// perfBucket's functions took (self time), and the kernel's.
func PerfBreakdown(ctx context.Context, data string) (string, error) {
	cmd := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "comm,dso,sym",
		"-g", "none", "--percent-limit", "0", "--field-separator", "\t")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("perf report: %w", err)
	}
	const kernel = "Linux kernel (syscalls, network, scheduling, page faults)"
	names := []string{}
	for _, b := range perfBuckets {
		names = append(names, b.name)
	}
	names = append(names, kernel, "other")
	share := map[string]map[string]float64{} // comm → bucket → %
	total := map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) < 4 {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f[0]), "%"), 64)
		if err != nil {
			continue
		}
		comm, dso, sym := procComm(f[1]), strings.TrimSpace(f[2]), strings.TrimSpace(f[3])
		sym = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(sym, "[.]"), "[k]"))
		bucket := "other"
		if strings.Contains(dso, "kernel") {
			bucket = kernel
		} else {
		match:
			for _, b := range perfBuckets {
				for _, p := range b.prefixes {
					if strings.HasPrefix(sym, p) {
						bucket = b.name
						break match
					}
				}
			}
		}
		if share[comm] == nil {
			share[comm] = map[string]float64{}
		}
		share[comm][bucket] += pct
		total[comm] += pct
	}
	comms := make([]string, 0, len(total))
	for c := range total {
		comms = append(comms, c)
	}
	sort.Slice(comms, func(i, j int) bool { return total[comms[i]] > total[comms[j]] })
	var b strings.Builder
	b.WriteString("| self time in | " + strings.Join(comms, " | ") + " | all |\n|---|")
	for range comms {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, n := range append(names, "**process total**") {
		all := 0.0
		cells := make([]string, len(comms))
		for i, c := range comms {
			v := share[c][n]
			if n == "**process total**" {
				v = total[c]
			}
			all += v
			cells[i] = F(v, 1)
		}
		if all < 0.05 {
			continue
		}
		b.WriteString("| " + n + " | " + strings.Join(cells, " | ") + " | " + F(all, 1) + " |\n")
	}
	return b.String(), nil
}

// perfPaths are code paths whose inclusive time (with everything they
// call, kernel included) says where floe's work goes.
var perfPaths = []struct{ name, sym string }{
	{"Parquet write (iceberg-go WriteRecords → pqarrow, per writer)", "github.com/apache/iceberg-go/table.(*RollingDataWriter).stream"},
	{"  zstd inside it", "github.com/klauspost/compress/zstd.(*Encoder).EncodeAll"},
	{"sink: split batches over writers (takeRows)", "github.com/floehq/floe/plugins/iceberg.takeRows"},
	{"sink: Write (route, split, enqueue)", "github.com/floehq/floe/plugins/iceberg.(*task).Write"},
	{"datagen: generate records (Arrow)", "github.com/floehq/floe/plugins/datagen/generate.(*Generator).AppendArrow"},
	{"kafka: Avro → Arrow decode", "github.com/floehq/floe/schemas.(*Decoder).Append"},
	{"partitioner: choose writers (hash)", "github.com/floehq/floe/plugins/partitioners.(*hashTask).Partition"},
	{"Arrow IPC encode (sdk)", "github.com/floehq/floe/sdk/internal/arrowipc.EncodeRecordBatch"},
	{"Arrow IPC decode (sdk)", "github.com/floehq/floe/sdk/internal/arrowipc.DecodeRecordBatch"},
	{"gRPC send loop (HTTP/2 frames, TLS, socket writes)", "google.golang.org/grpc/internal/transport.(*loopyWriter).run"},
	{"gRPC client receive loop", "google.golang.org/grpc/internal/transport.(*http2Client).reader"},
	{"gRPC server receive loop", "google.golang.org/grpc/internal/transport.(*http2Server).HandleStreams"},
	{"TLS writes (AutoMTLS)", "crypto/tls.(*Conn).Write"},
	{"TLS reads (AutoMTLS)", "crypto/tls.(*Conn).Read"},
	{"protobuf marshal", "google.golang.org/grpc/encoding/proto.(*codecV2).Marshal"},
	{"protobuf unmarshal", "google.golang.org/grpc/encoding/proto.(*codecV2).Unmarshal"},
	{"Go GC background marking", "runtime.gcBgMarkWorker"},
}

// PerfPaths renders the inclusive share of all samples of perfPaths, per
// process (rows with nothing are left out).
func PerfPaths(ctx context.Context, data string) (string, error) {
	cmd := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--children", "--sort", "comm,sym",
		"-g", "none", "--percent-limit", "0", "--field-separator", "\t")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("perf report: %w", err)
	}
	incl := map[string]map[string]float64{} // sym → comm → %
	comms := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) < 4 {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f[0]), "%"), 64)
		if err != nil {
			continue
		}
		comm := procComm(f[2])
		sym := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(f[3]), "[.]"), "[k]"))
		if incl[sym] == nil {
			incl[sym] = map[string]float64{}
		}
		incl[sym][comm] += pct
		comms[comm] = true
	}
	var cs []string
	for c := range comms {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	var b strings.Builder
	b.WriteString("| inclusive time of | " + strings.Join(cs, " | ") + " |\n|---|")
	for range cs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range perfPaths {
		m := incl[p.sym]
		any := false
		cells := make([]string, len(cs))
		for i, c := range cs {
			cells[i] = "–"
			if v := m[c]; v >= 0.05 {
				cells[i] = F(v, 1)
				any = true
			}
		}
		if any {
			b.WriteString("| " + p.name + " | " + strings.Join(cells, " | ") + " |\n")
		}
	}
	return b.String(), nil
}

// procComm names a sampled thread's process: Go threads carry the
// binary's name (cut to 15 characters), librdkafka's own threads are
// named rdk:* and live in the kafka plugin.
func procComm(comm string) string {
	comm = strings.TrimSpace(comm)
	if strings.HasPrefix(comm, "rdk:") {
		return "floe-plugin-kaf"
	}
	return comm
}
