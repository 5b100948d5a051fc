package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floehq/floe/sdk"
)

func TestUnavailableTellsOutagesFromConflicts(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tt := range []struct {
		err               error
		unavailable, perm bool
	}{
		{fmt.Errorf("load table: %w", refused), true, false},
		{fmt.Errorf("commit: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), true, false},
		{fmt.Errorf("commit: %w", &pgconn.PgError{Code: "23505", Message: "duplicate key"}), false, false},
		{fmt.Errorf("commit: %w", rest.ErrServiceUnavailable), true, false},
		{fmt.Errorf("commit: %w", rest.ErrCommitStateUnknown), true, false},
		{fmt.Errorf("commit: %w", io.ErrUnexpectedEOF), true, false},
		{errors.New(`failed to connect to host=127.0.0.1 user=floe database=catalog: dial error`), true, false},
		{fmt.Errorf("commit: %w", table.ErrCommitFailed), false, false},
		{errors.New(`requirement failed: branch "main" has changed`), false, false},
		{fmt.Errorf("load: %w", rest.ErrUnauthorized), false, true},
		{fmt.Errorf("load: %w", catalog.ErrNoSuchTable), false, true},
		{context.Canceled, false, false},
	} {
		if got := unavailable(tt.err); got != tt.unavailable {
			t.Errorf("unavailable(%v) = %v, want %v", tt.err, got, tt.unavailable)
		}
		if got := permanent(tt.err); got != tt.perm {
			t.Errorf("permanent(%v) = %v, want %v", tt.err, got, tt.perm)
		}
		c := classify(tt.err)
		if errors.Is(c, sdk.ErrTransient) != tt.unavailable || errors.Is(c, sdk.ErrPermanent) != tt.perm || c.Error() != tt.err.Error() {
			t.Errorf("classify(%v) = %v (transient %v, permanent %v)", tt.err, c, errors.Is(c, sdk.ErrTransient), errors.Is(c, sdk.ErrPermanent))
		}
	}
}

// cutProxy forwards TCP connections to a real server until cut: then it
// drops every open connection and every new one at once, as a database
// that is restarting does, until restored.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		if !down {
			p.conns[c] = true
		}
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		go p.pipe(c)
	}
}

func (p *cutProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// cut drops every connection and refuses new ones until restore.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// postgresBehind returns FLOE_POSTGRES_URL pointed at a cutProxy.
func postgresBehind(t *testing.T) (string, *cutProxy) {
	t.Helper()
	raw := os.Getenv("FLOE_POSTGRES_URL")
	if raw == "" {
		t.Skip("set FLOE_POSTGRES_URL=postgres://user:pw@host:5432/db to run the sink against a Postgres catalog")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	return u.String(), p
}

// A Postgres catalog that drops its connections and refuses new ones for
// 2 s during a commit (a restart): the commit waits it out and succeeds
// without spending the conflict budget (one attempt), and the table holds
// every checkpoint exactly once. One that stays away past
// iceberg.commit.retry.transient-timeout-ms fails the commit marked
// sdk.ErrTransient, naming the outage, not a conflict.
func TestCommitRidesOutACatalogOutage(t *testing.T) {
	pgURL, proxy := postgresBehind(t)
	f := newFixture(t, map[string]string{
		keyCatalogURI:            pgURL,
		keyCatalogName:           fmt.Sprintf("floe_outage_%d", time.Now().UnixNano()),
		keyTables:                "pg.outage",
		keyRetryAttempts:         "2",
		keyRetryTransientTimeout: "20000",
	})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 100))

	b := batchV1("p", 100, 50)
	write(t, tk, 2, b)
	res, err := tk.Flush(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	proxy.cut()
	seen := make(chan []sdk.ServiceWait, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		seen <- tk.waits.list(f.connector)
		time.Sleep(500 * time.Millisecond)
		proxy.restore()
	}()
	start := time.Now()
	tcs, err := tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 2, Ranges: ranges(b), Results: res})
	if err != nil {
		t.Fatalf("commit during a 2 s catalog outage: %v", err)
	}
	t.Logf("commit took %v across a 2 s outage", time.Since(start).Round(time.Millisecond))
	if len(tcs) != 1 || tcs[0].Attempts != 1 {
		t.Errorf("table commits %+v; want one, on its first attempt (an outage is not a conflict)", tcs)
	}
	// What the host's status shows (sdk.SinkWithWaits).
	catalogAt := "catalog at postgres://" + proxy.ln.Addr().String()
	if w := <-seen; len(w) != 1 || !strings.HasPrefix(w[0].Service, catalogAt) || w[0].Attempts < 1 || w[0].LastError == "" {
		t.Errorf("during the outage the sink waited for %+v; want the %s…, with attempts and the error", w, catalogAt)
	}
	if w := tk.waits.list(f.connector); len(w) != 0 {
		t.Errorf("after the commit the sink still waits for %+v", w)
	}
	f.checkExactlyOnce("pg.outage", map[string][2]int64{"p": {0, 150}})

	t.Run("past the timeout", func(t *testing.T) {
		f.cfg[keyRetryTransientTimeout] = "1500"
		tk := f.open(1)
		prepare(t, tk, 1, schemaV1)
		b := batchV1("p", 150, 10)
		write(t, tk, 3, b)
		res, err := tk.Flush(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		proxy.cut()
		defer proxy.restore()
		start := time.Now()
		_, err = tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 3, Ranges: ranges(b), Results: res})
		took := time.Since(start)
		if !errors.Is(err, sdk.ErrTransient) || !strings.Contains(err.Error(), "catalog at postgres://"+proxy.ln.Addr().String()) ||
			!strings.Contains(err.Error(), "unavailable for") || !strings.Contains(err.Error(), keyRetryTransientTimeout) {
			t.Fatalf("commit with the catalog gone: %v; want sdk.ErrTransient naming the catalog, the outage and %s", err, keyRetryTransientTimeout)
		}
		if took < 1500*time.Millisecond || took > 15*time.Second {
			t.Errorf("gave up after %v; want about the 1.5 s timeout", took)
		}
	})
}

// A failed upload joined with the cancellation it caused is not a
// shutdown for the writer: its text still says the store was unreachable.
func TestUnavailableTextSeesPastACancellation(t *testing.T) {
	err := errors.Join(errors.New(`Put "http://127.0.0.1:9000/b/k": dial tcp 127.0.0.1:9000: connect: connection refused`), context.Canceled)
	if unavailable(err) {
		t.Error("unavailable took a cancelled upload for an outage; it treats every cancellation as a shutdown")
	}
	if !unavailableText(err) {
		t.Errorf("unavailableText(%v) = false, want true", err)
	}
	if unavailableText(context.Canceled) {
		t.Error("a bare cancellation reads as an outage")
	}
}
