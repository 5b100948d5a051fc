package iceberg

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floehq/floe/lake"
)

// culprit names the service whose address an error shows, whichever
// client relayed it; then goes by the error's type.
func TestCulpritNamesTheFailingService(t *testing.T) {
	s := lake.CatalogConfig{Type: lake.CatalogREST, URI: "http://127.0.0.1:8181",
		Warehouse: "s3://lake/rest", Props: map[string]string{"s3.endpoint": "http://127.0.0.1:818"}}.Services()
	if s.Catalog != "catalog at http://127.0.0.1:8181" || s.Store != "object store at http://127.0.0.1:818" {
		t.Fatalf("services %+v", s)
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{errors.New(`Post "http://127.0.0.1:8181/v1/namespaces/db/tables/t": dial tcp 127.0.0.1:8181: connect: connection refused`), s.Catalog},
		// The store's port is a prefix of the catalog's: only a whole
		// address counts.
		{errors.New(`Put "http://127.0.0.1:818/lake/rest/m.avro": dial tcp 127.0.0.1:818: connect: connection refused`), s.Store},
		// The REST catalog relays the store's refusal.
		{fmt.Errorf("%w: ServiceFailureException: Connect to 127.0.0.1:818 [/127.0.0.1] failed", rest.ErrServerError), s.Store},
		{fmt.Errorf("%w: ServiceUnavailableException: busy", rest.ErrServiceUnavailable), s.Catalog},
		{&smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: errors.New("EOF")}, s.Store},
		{&pgconn.PgError{Code: "57P01"}, s.Catalog},
		{errors.New("unexpected EOF"), s.Catalog + " or " + s.Store},
	} {
		if got := culprit(s, tt.err); got != tt.want {
			t.Errorf("culprit(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	// With the warehouse in a local folder only the catalog can be away.
	pg := lake.CatalogConfig{Type: lake.CatalogSQL, URI: "postgres://floe@127.0.0.1:5432/catalog", Warehouse: "file:///w"}.Services()
	if got := culprit(pg, errors.New("conn closed")); got != "catalog at postgres://127.0.0.1:5432/catalog" {
		t.Errorf("culprit(conn closed) on a Postgres catalog with a local warehouse = %q", got)
	}
}

// A wait keeps its start across failures, counts them, and ends when the
// service answers; connectors are apart.
func TestWaitsFollowAnOutage(t *testing.T) {
	var w waits
	w.failed("a", "catalog at x", errors.New("refused"))
	first := w.list("a")
	time.Sleep(5 * time.Millisecond)
	w.failed("a", "catalog at x", errors.New("refused again"))
	w.failed("a", "object store at y", errors.New("reset"))
	got := w.list("a")
	if len(got) != 2 || got[0].Service != "catalog at x" || got[0].Attempts != 2 || !got[0].Since.Equal(first[0].Since) ||
		got[0].LastError != "refused again" || got[1].Service != "object store at y" {
		t.Fatalf("waits %+v", got)
	}
	if len(w.list("b")) != 0 {
		t.Fatalf("connector b waits for %+v", w.list("b"))
	}
	w.answered("a", "object store at y")
	if got := w.list("a"); len(got) != 1 || got[0].Service != "catalog at x" {
		t.Fatalf("after the store answered: %+v", got)
	}
	w.answered("a")
	if got := w.list("a"); len(got) != 0 {
		t.Fatalf("after a commit: %+v", got)
	}
	var none *waits
	none.failed("a", "x", errors.New("e")) // no sink: records nothing
	if none.list("a") != nil {
		t.Fatal("a nil waits lists waits")
	}
}
