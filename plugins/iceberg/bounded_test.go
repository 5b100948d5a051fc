package iceberg

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// hangingCatalog applies a commit and then, while hang holds, never
// answers: a catalog whose answer is lost, or that accepts the connection
// and stalls.
type hangingCatalog struct {
	catalog.Catalog
	mu      sync.Mutex
	hang    int // commits still to hang on
	applied bool
}

func (c *hangingCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c.mu.Lock()
	hang := c.hang > 0
	if hang {
		c.hang--
	}
	c.mu.Unlock()
	md, loc, err := c.Catalog.CommitTable(context.WithoutCancel(ctx), id, reqs, updates)
	if !hang || err != nil {
		return md, loc, err
	}
	c.mu.Lock()
	c.applied = true
	c.mu.Unlock()
	<-ctx.Done()
	return nil, "", ctx.Err()
}

// A catalog that applies a commit and never answers: the request gives up
// after iceberg.commit.request-timeout-ms, the commit's fate is unknown,
// and the sink reads the table back and finds its checkpoint there
// instead of committing it again. The sink says it waited for the
// catalog meanwhile, and waits for nothing after.
func TestCommitTimesOutAndReadsBack(t *testing.T) {
	f := newFixture(t, map[string]string{keyRequestTimeout: "300"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 100))

	lc := tk.cat.(*listCatalog)
	bc := lc.Catalog.(*boundedCatalog)
	hc := &hangingCatalog{Catalog: bc.Catalog, hang: 1}
	bc.Catalog = hc

	b := batchV1("p", 100, 50)
	write(t, tk, 2, b)
	res, err := tk.Flush(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var tcs []sdk.TableCommit
	start := time.Now()
	go func() {
		var err error
		tcs, err = tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 2, Ranges: ranges(b), Results: res})
		done <- err
	}()
	var seen []sdk.ServiceWait
	deadline := time.After(time.Minute)
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			if w := tk.waits.list(f.connector); len(w) > 0 && seen == nil {
				seen = w
			}
		case <-deadline:
			t.Fatal("the commit did not return in a minute: no request timeout")
		}
	}
	took := time.Since(start)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if !hc.applied {
		t.Fatal("the catalog never applied the commit it hung on")
	}
	if took < 300*time.Millisecond || took > 10*time.Second {
		t.Errorf("commit took %v; want past the 300 ms request timeout, then a read back", took)
	}
	if len(tcs) != 1 || tcs[0].Attempts != 1 {
		t.Errorf("table commits %+v; want one, its first attempt found committed (a timeout is not a conflict)", tcs)
	}
	if len(seen) != 1 || !strings.HasPrefix(seen[0].Service, "embedded catalog") || !strings.Contains(seen[0].LastError, keyRequestTimeout) {
		t.Errorf("during the stall the sink waited for %+v; want the embedded catalog, its error naming %s", seen, keyRequestTimeout)
	}
	if w := tk.waits.list(f.connector); len(w) != 0 {
		t.Errorf("after the commit the sink still waits for %+v", w)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 150}})
	n := 0
	for _, s := range floeSnapshots(f.load("db.events"), f.connector) {
		if s.Summary.Properties[summaryCheckpoint] == "2" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the table holds checkpoint 2 %d times", n)
	}
}
