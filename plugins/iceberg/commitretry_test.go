package iceberg

import (
	"context"
	"errors"
	"testing"

	"github.com/floehq/floe/sdk"
)

// TestCommitRetryAfterPartial: Commit(2) fails after db.a committed; the
// host retries the same request. db.a is skipped (its summary holds the
// checkpoint), db.b is committed, and each table holds checkpoint 2 once.
func TestCommitRetryAfterPartial(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		name := "same_task"
		if reopen {
			name = "reopened"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, map[string]string{keyTables: "db.a,db.b"})
			tk := f.open(1)
			prepare(t, tk, 1, schemaV1)
			step(t, tk, 1, batchV1("p0", 0, 100))
			crash := errors.New("killed")
			tk.beforeCommit = func(name string, _ int) error {
				if name == "db.b" {
					return crash
				}
				return nil
			}
			b := batchV1("p0", 100, 100)
			rs := ranges(b)
			write(t, tk, 2, b)
			res, err := tk.Flush(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			req := sdk.CommitRequest{Checkpoint: 2, Ranges: rs, Results: res}
			if _, err := tk.Commit(context.Background(), req); !errors.Is(err, crash) {
				t.Fatalf("err = %v", err)
			}
			tk.beforeCommit = nil
			if reopen {
				_ = tk.Close(context.Background())
				tk = f.open(1)
				prepare(t, tk, 1, schemaV1)
			}
			if _, err := tk.Commit(context.Background(), req); err != nil {
				t.Fatalf("retry: %v", err)
			}
			for _, name := range []string{"db.a", "db.b"} {
				n := 0
				for _, s := range floeSnapshots(f.load(name), f.connector) {
					if s.Summary.Properties[summaryCheckpoint] == "2" {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s holds checkpoint 2 %d times", name, n)
				}
				f.checkExactlyOnce(name, map[string][2]int64{"p0": {0, 200}})
			}
		})
	}
}
