package sdk_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
	"github.com/floehq/floe/sdk/sdktest"
)

// seenPartitioner records the columns and rows of each batch Partition
// receives; columns, when not nil, is what it declares.
type seenPartitioner struct {
	columns *[]string

	mu   sync.Mutex
	cols [][]string
	rows []int64
}

func (p *seenPartitioner) Open(context.Context, sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	if p.columns != nil {
		return declaringTask{seenTask{p}}, nil
	}
	return seenTask{p}, nil
}

type seenTask struct{ p *seenPartitioner }

func (t seenTask) Partition(_ context.Context, b sdk.Batch) ([]uint32, error) {
	var names []string
	for _, f := range b.Records.Schema().Fields() {
		names = append(names, f.Name)
	}
	t.p.mu.Lock()
	t.p.cols = append(t.p.cols, names)
	t.p.rows = append(t.p.rows, b.Records.NumRows())
	t.p.mu.Unlock()
	return make([]uint32, b.Records.NumRows()), nil
}

func (seenTask) Close(context.Context) error { return nil }

type declaringTask struct{ seenTask }

func (t declaringTask) Columns() []string { return *t.p.columns }

func columns(names ...string) *[]string { return &names }

// TestPartitionerColumns: a partitioner that declares its columns gets
// every row but only those columns, in the batch's order (none at all for
// an empty list); one that declares nothing gets whole batches.
func TestPartitionerColumns(t *testing.T) {
	all := []string{"id", "customer_id", "amount", "ts", sdk.ColumnOffset, sdk.ColumnTimestamp, sdk.ColumnKey}
	tests := []struct {
		name     string
		declared *[]string
		want     []string
		declares bool
	}{
		{"declares nothing", nil, all, false},
		{"key columns", columns(sdk.ColumnKey, "customer_id", "not_there"), []string{"customer_id", sdk.ColumnKey}, true},
		{"no column", columns(), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &seenPartitioner{columns: tc.declared}
			proc := serveProbe(t, sdk.Component{Name: "seen", Partitioner: p})
			ctx := context.Background()
			task, err := proc.OpenPartitioner(ctx, client.PartitionerOpen{Component: "seen", Connector: "c", Writers: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = task.Close(ctx) }()
			if got, declares := task.Columns(); declares != tc.declares || (declares && !slices.Equal(got, *tc.declared)) {
				t.Errorf("Columns() = %q, %v; want %v", got, declares, tc.declares)
			}
			b := sdktest.SampleBatches(1, 1, 50)[0]
			defer b.Records.Release()
			w, err := client.EncodeBatch(b.Partition, b.From, b.Next, b.SchemaID, b.Records)
			if err != nil {
				t.Fatal(err)
			}
			writers, _, err := task.Partition(ctx, w)
			if err != nil || len(writers) != 50 {
				t.Fatalf("Partition: %d writers, %v", len(writers), err)
			}
			if len(p.cols) != 1 || !slices.Equal(p.cols[0], tc.want) || p.rows[0] != 50 {
				t.Errorf("the partitioner saw columns %q and %v rows; want %q and 50", p.cols, p.rows, tc.want)
			}
		})
	}
}
