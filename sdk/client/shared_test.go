package client_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// offsetsSink records the __offset values of every row it is given.
type offsetsSink struct {
	mu      sync.Mutex
	offsets []int64
}

func (s *offsetsSink) Open(context.Context, sdk.SinkOpenRequest) (sdk.SinkTask, error) { return s, nil }

func (s *offsetsSink) Write(_ context.Context, req sdk.WriteRequest) ([]sdk.Rejected, error) {
	rec := req.Batch.Records
	col := rec.Column(rec.Schema().FieldIndices(sdk.ColumnOffset)[0]).(*array.Int64)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offsets = append(s.offsets, col.Int64Values()...)
	return nil, nil
}

func (s *offsetsSink) Flush(context.Context, uint64) ([]sdk.WriteResult, error) { return nil, nil }
func (s *offsetsSink) Commit(context.Context, sdk.CommitRequest) ([]sdk.TableCommit, error) {
	return nil, nil
}
func (s *offsetsSink) Close(context.Context) error { return nil }

func attachSink(t *testing.T, sink sdk.Sink, shared bool) *client.SinkTask {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := sdk.ServeInProcess(ctx, sdk.InProcessOptions{}, sdk.Component{Name: "offsets", Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.Attach(ctx, client.AttachOptions{Addr: srv.Addr, Done: srv.Done, SharedMemory: shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); cancel(); <-srv.Done })
	task, err := p.OpenSink(ctx, client.SinkOpen{Component: "offsets", Connector: "c", Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestSharedMemory reads batches from a source process with and without
// shared memory and writes them to a sink: the rows arrive either way.
// Shared, the batches live on in the host's own descriptors after the
// source process is gone (it may crash once it answered), and Release
// frees them.
func TestSharedMemory(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			p := start(t, client.StartOptions{SharedMemory: shared})
			task := openCounter(t, p, &fakeHost{positions: map[string]int64{"p0": 0}}, map[string]string{"batch.records": "100"})
			ctx := t.Context()
			res, err := task.Read(ctx, 3)
			if err != nil || len(res.Batches) != 3 {
				t.Fatalf("Read: %d batches, %v", len(res.Batches), err)
			}
			for _, b := range res.Batches {
				if b.Shared() != shared || b.Size() == 0 || (shared && len(b.IPC) != 0) {
					t.Fatalf("batch [%d, %d): shared %v, %d bytes, %d bytes of IPC", b.From, b.Next, b.Shared(), b.Size(), len(b.IPC))
				}
			}
			// The source process ends: what the host received stays.
			_ = task.Close(ctx)
			p.Kill()
			sink := &offsetsSink{}
			st := attachSink(t, sink, shared)
			for _, b := range res.Batches {
				if _, err := st.Write(ctx, 1, b, nil); err != nil {
					t.Fatalf("Write [%d, %d): %v", b.From, b.Next, err)
				}
				rec, err := b.Decode(nil)
				if err != nil || rec.NumRows() != 100 {
					t.Fatalf("Decode [%d, %d): %v", b.From, b.Next, err)
				}
				rec.Release()
				b.Release()
				b.Release()
			}
			if len(sink.offsets) != 300 {
				t.Fatalf("the sink got %d rows", len(sink.offsets))
			}
			// Every batch its own rows: a Read's batches are encoded
			// one after another into the same memory when shared.
			for i, o := range sink.offsets {
				if o != int64(i) {
					t.Fatalf("row %d has offset %d", i, o)
				}
			}
			if shared {
				if _, err := res.Batches[0].Decode(nil); err == nil {
					t.Error("a released shared batch still decodes")
				}
				if n := openMemfds(t); n != 0 {
					t.Errorf("%d shared memory files still open in the host after Release", n)
				}
			}
		})
	}
}

// openMemfds counts this process's descriptors of memory files.
func openMemfds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && len(target) > 6 && target[:6] == "/memfd" {
			n++
		}
	}
	return n
}

// TestSharedMemorySourceReleases: the source keeps the files of a response
// until the host acknowledges it in its next Read, then closes them.
func TestSharedMemorySourceReleases(t *testing.T) {
	p := start(t, client.StartOptions{SharedMemory: true})
	task := openCounter(t, p, &fakeHost{positions: map[string]int64{"p0": 0}}, map[string]string{"batch.records": "10"})
	count := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Pid()))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		n := 0
		for _, e := range ents {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p.Pid(), e.Name())); err == nil && len(target) > 6 && target[:6] == "/memfd" {
				n++
			}
		}
		return n
	}
	for i, want := range []int{3, 1} {
		res, err := task.Read(t.Context(), 3-2*i)
		if err != nil || len(res.Batches) != want {
			t.Fatalf("Read %d: %d batches, %v", i+1, len(res.Batches), err)
		}
		for _, b := range res.Batches {
			b.Release()
		}
		if n := count(); n != want {
			t.Errorf("after Read %d the source holds %d shared memory files, want %d (the unacknowledged response's)", i+1, n, want)
		}
	}
	_ = task.Close(t.Context())
	if n := count(); n != 0 {
		t.Errorf("after Close the source holds %d shared memory files", n)
	}
}
