package iceberg

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/floehq/floe/sdk"
)

// tracer records every HTTP round trip.
type tracer struct {
	base http.RoundTripper
	kind string
	log  *[]traced
}

type traced struct {
	kind, method, path string
	at, took           time.Duration
}

var traceStart = time.Now()

var traceMu sync.Mutex

func (tr *tracer) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := tr.base.RoundTrip(r)
	traceMu.Lock()
	p := r.URL.Path
	if i := strings.LastIndex(p, "/"); i >= 0 && len(p)-i > 40 {
		p = "…" + p[len(p)-40:]
	}
	if r.URL.RawQuery != "" && tr.kind == "s3" {
		p += "?" + r.URL.RawQuery
	}
	*tr.log = append(*tr.log, traced{tr.kind, r.Method, p, start.Sub(traceStart), time.Since(start)})
	traceMu.Unlock()
	return resp, err
}

// TestRESTCommitTrace times 30 commits of two 100-row files each on the
// REST catalog + S3 of e2e/services and logs where their time goes. It
// runs only when asked (it needs the services and the heavy lock):
//
//	. /tmp/floe-services/env
//	FLOE_TRACE_COMMITS=1 flock -o /tmp/floe-heavy.lock go test ./plugins/iceberg -run TestRESTCommitTrace -v
//
// FLOE_TRACE_N sets the number of commits (30).
//
// As it stands the sink's own file IO and catalog are used (commit times
// as in production). With FLOE_TRACE_INJECT=1 the test's own REST catalog
// and S3 HTTP client record every round trip of a commit (the S3 client
// then comes from the test's AWS configuration).
func TestRESTCommitTrace(t *testing.T) {
	uri := os.Getenv("FLOE_REST_CATALOG_URI")
	if uri == "" || os.Getenv("FLOE_TRACE_COMMITS") == "" {
		t.Skip("set FLOE_TRACE_COMMITS=1 and source the services' env")
	}
	var log []traced
	s3tr := &tracer{base: http.DefaultTransport.(*http.Transport).Clone(), kind: "s3", log: &log}
	resttr := &tracer{base: http.DefaultTransport.(*http.Transport).Clone(), kind: "rest", log: &log}
	s3props := map[string]string{
		"s3.endpoint":          os.Getenv("FLOE_S3_ENDPOINT"),
		"s3.region":            os.Getenv("FLOE_S3_REGION"),
		"s3.path-style-access": "true",
		"s3.access-key-id":     os.Getenv("FLOE_S3_ACCESS_KEY"),
		"s3.secret-access-key": os.Getenv("FLOE_S3_SECRET_KEY"),
	}
	cfg := map[string]string{
		keyCatalogType:               "rest",
		keyCatalogURI:                uri,
		"iceberg.catalog.credential": os.Getenv("FLOE_REST_CATALOG_CREDENTIAL"),
		"iceberg.catalog.warehouse":  os.Getenv("FLOE_REST_CATALOG_WAREHOUSE"),
		keyTables:                    fmt.Sprintf("trace%d.events", time.Now().UnixNano()),
	}
	for k, v := range s3props {
		cfg["iceberg.catalog."+k] = v
	}
	f := newFixture(t, cfg)
	tk := f.open(2)
	ctx := context.Background()
	if os.Getenv("FLOE_TRACE_INJECT") != "" {
		props := map[string]string{}
		for k, v := range s3props {
			props[k] = v
		}
		cat, err := rest.NewCatalog(ctx, "floe", uri, rest.WithCredential(os.Getenv("FLOE_REST_CATALOG_CREDENTIAL")),
			rest.WithWarehouseLocation(os.Getenv("FLOE_REST_CATALOG_WAREHOUSE")), rest.WithCustomTransport(resttr),
			rest.WithAdditionalProps(props))
		if err != nil {
			t.Fatal(err)
		}
		tk.cat = keepLists(boundCatalog(cat, tk.cfg.requestTimeout), nil, true)
		ctx = utils.WithAwsConfig(ctx, &aws.Config{HTTPClient: &http.Client{Transport: s3tr}, Region: "us-east-1"})
	}
	prepare(t, tk, 1, schemaV1)
	n := 30
	if v, err := strconv.Atoi(os.Getenv("FLOE_TRACE_N")); err == nil && v >= 10 {
		n = v
	}
	type phase struct{ write, flush, commit time.Duration }
	var phases []phase
	var marks []int
	for i := 0; i < n; i++ {
		cp := uint64(i + 1)
		marks = append(marks, len(log))
		b1, b2 := batchV1("p", int64(i*100), 100), batchV1("q", int64(i*100), 100)
		s := time.Now()
		for _, b := range []sdk.Batch{b1, b2} {
			if _, err := tk.Write(ctx, sdk.WriteRequest{Checkpoint: cp, Batch: b}); err != nil {
				t.Fatal(err)
			}
			b.Records.Release()
		}
		w := time.Since(s)
		s = time.Now()
		res, err := tk.Flush(ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		fl := time.Since(s)
		marks = append(marks, len(log))
		s = time.Now()
		if _, err := tk.Commit(ctx, sdk.CommitRequest{Checkpoint: cp, Ranges: ranges(b1, b2), Results: res}); err != nil {
			t.Fatal(err)
		}
		phases = append(phases, phase{w, fl, time.Since(s)})
	}
	marks = append(marks, len(log))
	var commits []time.Duration
	slowest := 0
	for i, p := range phases {
		if p.commit > phases[slowest].commit {
			slowest = i
		}
	}
	for i, p := range phases {
		commits = append(commits, p.commit)
		if i < 3 || i >= n-2 || i == slowest {
			t.Logf("checkpoint %d: write %v flush %v commit %v", i+1, p.write.Round(time.Microsecond), p.flush.Round(time.Microsecond), p.commit.Round(time.Microsecond))
			for _, r := range log[marks[2*i]:marks[2*i+1]] {
				t.Logf("   phase1 %-4s %-6s %-55s %7.2f ms", r.kind, r.method, r.path, float64(r.took.Microseconds())/1000)
			}
			for _, r := range log[marks[2*i+1]:marks[2*i+2]] {
				t.Logf("   commit %-4s %-6s %-55s %7.2f ms", r.kind, r.method, r.path, float64(r.took.Microseconds())/1000)
			}
		}
	}
	warm := slices.Clone(commits[min(10, n/3):])
	sort.Slice(commits, func(i, j int) bool { return commits[i] < commits[j] })
	slices.Sort(warm)
	t.Logf("commit p50 %v p90 %v p99 %v max %v over %d; after the first %d: p50 %v p99 %v max %v",
		commits[n/2], commits[n*9/10], commits[n*99/100], commits[n-1], n, n-len(warm), warm[len(warm)/2], warm[len(warm)*99/100], warm[len(warm)-1])
	if lc, ok := tk.cat.(*listCatalog); ok {
		t.Logf("manifest lists read from memory: %d", lc.lists.hits)
	}
	per := map[string][]time.Duration{}
	for i := range phases {
		for _, r := range log[marks[2*i+1]:marks[2*i+2]] {
			k := r.kind + " " + r.method
			if r.kind == "rest" {
				k += " " + r.path
			}
			per[k] = append(per[k], r.took)
		}
	}
	for k, v := range per {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		var sum time.Duration
		for _, d := range v {
			sum += d
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		t.Logf("commit phase %-50s %5.2f per commit, p50 %6.2f ms, p99 %6.2f ms, mean %6.2f ms", k, float64(len(v))/float64(n),
			ms(v[len(v)/2]), ms(v[len(v)*99/100]), ms(sum)/float64(len(v)))
	}
}
