package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// A commit meets three kinds of failure, each handled its own way:
//
//   - a conflict with another writer (retryable): reload, fence again and
//     retry, within iceberg.commit.retry.max-attempts;
//   - the catalog or the object store unavailable (unavailable): a refused
//     connection, a timeout, a 5xx answer, a database restarting. Nothing
//     is wrong with the commit: wait with backoff and retry, within
//     iceberg.commit.retry.transient-timeout-ms, without spending the
//     conflict budget; past it the error is marked sdk.Transient, so the
//     host restarts the task with backoff rather than waiting for a human;
//   - anything else fails the commit with its reason; the failures that no
//     retry can fix (refused credentials, a dropped table or namespace) are
//     marked sdk.Permanent.

// unavailable reports whether err means the catalog or the object store
// could not be reached or failed to answer, rather than refusing the
// commit.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var netErr net.Error
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	var httpErr interface{ HTTPStatusCode() int } // the AWS SDK's response errors
	switch {
	case errors.Is(err, sdk.ErrTransient):
		return true
	case errors.Is(err, rest.ErrServiceUnavailable), errors.Is(err, rest.ErrServerError),
		errors.Is(err, rest.ErrCommitStateUnknown):
		// 5xx. A commit's fate is then unknown: the retry reloads the
		// table and looks before committing again.
		return true
	case errors.As(err, &pgErr):
		// 08: connection exceptions; 57P01-57P03: the server shutting
		// down or starting; 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300"
	case errors.As(err, &connectErr), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.As(err, &httpErr):
		code := httpErr.HTTPStatusCode()
		return code >= 500 || code == 429 || code == 408
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return unavailableText(err)
}

// unavailableText reports whether err's text says a service could not be
// reached: catalogs and blob stores flatten their errors into text, and
// some writers join the store's error with the cancellation it caused.
func unavailableText(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range unavailableTexts {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

var unavailableTexts = []string{
	"connection refused", "connection reset", "broken pipe", "i/o timeout", "no such host",
	"unexpected eof", "server closed", "conn closed", "failed to connect", "timeout awaiting",
	"the database system is", "terminating connection", "too many connections",
	"503 service unavailable", "502 bad gateway", "504 gateway", "500 internal server error",
	"slowdown", "service unavailable", "requesttimeout", "internalerror",
}

// permanent reports whether err is one no retry can fix without a human.
func permanent(err error) bool {
	return errors.Is(err, sdk.ErrPermanent) ||
		errors.Is(err, rest.ErrUnauthorized) || errors.Is(err, rest.ErrForbidden) ||
		errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) ||
		errors.Is(err, errNoTable)
}

// classify marks a commit error for the host: sdk.Transient when the
// catalog or the object store stayed unavailable, sdk.Permanent when a
// human must act; other errors are returned as they are.
func classify(err error) error {
	switch {
	case err == nil, errors.Is(err, sdk.ErrTransient), errors.Is(err, sdk.ErrPermanent), errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, ErrFenced):
		return err // fencing decides between committers; the host knows ErrFenced's text
	case unavailable(err):
		return sdk.Transient(err)
	case permanent(err):
		return sdk.Permanent(err)
	}
	return err
}

// outage paces one table commit's retries while the catalog or the object
// store is unavailable.
type outage struct {
	since time.Time
	wait  *backoff
	tries int
}

// ride waits before the next attempt after err, a failure of the catalog
// or the object store. Once the outage has lasted
// iceberg.commit.retry.transient-timeout-ms it returns the error to fail
// the commit with instead, marked sdk.Transient; or ctx's error.
func (t *task) ride(ctx context.Context, o *outage, table string, checkpoint uint64, err error) error {
	now := time.Now()
	if o.since.IsZero() {
		o.since = now
		// Ask again at least every 2 s, so a commit goes through soon
		// after the catalog is back.
		o.wait = &backoff{next: max(t.cfg.retryBackoff, 100*time.Millisecond), max: min(max(t.cfg.retryMaxBackoff, 100*time.Millisecond), 2*time.Second)}
	}
	o.tries++
	service := culprit(t.services, err)
	t.waits.failed(t.connector, service, err)
	if d := now.Sub(o.since); d >= t.cfg.transientTimeout {
		return sdk.Transient(fmt.Errorf("iceberg sink: table %s: commit checkpoint %d: %s unavailable for %s (%d tries, %s=%s): %w",
			table, checkpoint, service, d.Round(time.Millisecond), o.tries, keyRetryTransientTimeout, t.cfg.transientTimeout, err))
	}
	t.log.Warn("catalog or object store unavailable, retrying", "waiting_for", service, "table", table, "checkpoint", checkpoint,
		"try", o.tries, "failing_for", now.Sub(o.since).Round(time.Millisecond), "error", err)
	return o.wait.wait(ctx)
}

// warehousePoll is how often Open asks an unreachable object store again.
const warehousePoll = 2 * time.Second

// awaitWarehouse checks the warehouse's object store (lake.CheckWarehouse)
// and, while it cannot be reached at all, reports each failure to
// unreachable and asks again every warehousePoll
// for up to iceberg.commit.retry.transient-timeout-ms or until ctx ends:
// a task restarted during an object-store outage then resumes within
// seconds of the store being back, instead of failing each reopen and
// waiting out the restart backoff. Any answer from the store (a refused
// key, a missing bucket) returns at once; so does an outage that outlasts
// the wait, marked sdk.Transient.
func awaitWarehouse(ctx context.Context, cfg settings, log *slog.Logger, unreachable func(error)) error {
	start := time.Now()
	for tries := 1; ; tries++ {
		err := lake.CheckWarehouse(ctx, cfg.catalog)
		if err == nil || !errors.Is(err, lake.ErrUnreachable) {
			return err
		}
		unreachable(err)
		waited := time.Since(start)
		if waited+warehousePoll > cfg.transientTimeout {
			return sdk.Transient(err)
		}
		log.Warn("object store unreachable while opening, waiting for it", "try", tries,
			"failing_for", waited.Round(time.Millisecond), "error", err)
		select {
		case <-ctx.Done():
			return sdk.Transient(err)
		case <-time.After(warehousePoll):
		}
	}
}
