package iceberg

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// waits records, per connector, the services its sink is waiting for: the
// outages a commit rides out (ride), an Open waits out (awaitWarehouse)
// and a writer stops on. The sink answers sdk.SinkWithWaits from it, so
// the host's status names what a stalled connector waits for. It belongs
// to the process's sink, not to a task: the host closes a task whose
// writer lost the object store and opens another, and the outage, with
// its start, outlives both.
//
// A nil *waits records nothing (tests open tasks without a sink).
type waits struct {
	mu sync.Mutex
	m  map[string]map[string]*sdk.ServiceWait // connector → service → wait
}

// failed records that a request of connector's sink to service failed
// with err, a sign that the service is unavailable.
func (w *waits) failed(connector, service string, err error) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]map[string]*sdk.ServiceWait{}
	}
	byService := w.m[connector]
	if byService == nil {
		byService = map[string]*sdk.ServiceWait{}
		w.m[connector] = byService
	}
	sw := byService[service]
	if sw == nil {
		sw = &sdk.ServiceWait{Service: service, Since: time.Now()}
		byService[service] = sw
	}
	sw.Attempts++
	sw.LastError = err.Error()
}

// answered ends connector's waits for the services given, or for every
// service when none is given: a request that needed them succeeded.
func (w *waits) answered(connector string, services ...string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(services) == 0 {
		delete(w.m, connector)
		return
	}
	for _, s := range services {
		delete(w.m[connector], s)
	}
}

// list returns connector's waits, by service name.
func (w *waits) list(connector string) []sdk.ServiceWait {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sdk.ServiceWait
	for _, sw := range w.m[connector] {
		out = append(out, *sw)
	}
	slices.SortFunc(out, func(a, b sdk.ServiceWait) int { return cmp.Compare(a.Service, b.Service) })
	return out
}

// culprit names the service an unavailable err came from: the one whose
// address the error shows (the REST catalog relays the object store's
// refusal with the store's address in it), else the object store for an
// S3 API error and the catalog for the catalog's own (a REST error, a
// Postgres error) or when the warehouse is a local folder; both when it
// cannot tell.
func culprit(s lake.Services, err error) string {
	msg := err.Error()
	var op *smithy.OperationError
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	switch {
	case mentions(msg, s.StoreHost):
		return s.Store
	case mentions(msg, s.CatalogHost):
		return s.Catalog
	case errors.As(err, &op) && op.ServiceID == "S3":
		return s.Store
	case errors.As(err, &op), // Glue's
		errors.Is(err, rest.ErrRESTError), errors.As(err, &pgErr), errors.As(err, &connectErr),
		s.LocalStore: // pgx's "conn closed", say
		return s.Catalog
	}
	return s.Catalog + " or " + s.Store
}

// mentions reports whether msg names the address host (host:port), not
// merely a longer one it begins (127.0.0.1:8181 in 127.0.0.1:81810).
func mentions(msg, host string) bool {
	if host == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(msg[i:], host)
		if j < 0 {
			return false
		}
		end := i + j + len(host)
		if end == len(msg) || msg[end] < '0' || msg[end] > '9' {
			return true
		}
		i = end
	}
}
