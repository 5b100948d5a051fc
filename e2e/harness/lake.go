package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Lake is an S3-compatible object store (versitygw over a local folder)
// and an Iceberg REST catalog whose warehouse lives in it, as
// e2e/services/up starts them (FLOE_S3_*, FLOE_REST_CATALOG_*).
type Lake struct {
	// S3Endpoint is the store's URL; S3AccessKey and S3SecretKey its
	// root user; S3Bucket the bucket up created; S3Root the folder
	// holding the buckets; S3Log its request log.
	S3Endpoint, S3Region, S3AccessKey, S3SecretKey, S3Bucket, S3Root, S3Log string
	// RESTURI is the catalog's URL; RESTCredential its OAuth2 client
	// (client_id:client_secret) and RESTToken a static bearer token it
	// also accepts; RESTWarehouse the one warehouse it serves (an s3://
	// location in S3Bucket); RESTLog its log (one "request" line each).
	RESTURI, RESTCredential, RESTToken, RESTWarehouse, RESTLog string
}

// S3Keys are the connector keys that point floe's file IO at the store.
func (l Lake) S3Keys() map[string]string {
	return map[string]string{
		"iceberg.catalog.s3.endpoint":          l.S3Endpoint,
		"iceberg.catalog.s3.region":            l.S3Region,
		"iceberg.catalog.s3.path-style-access": "true",
		"iceberg.catalog.s3.access-key-id":     l.S3AccessKey,
		"iceberg.catalog.s3.secret-access-key": l.S3SecretKey,
	}
}

// RESTCatalogKeys are the connector keys of the REST catalog on the
// store, with OAuth2 client credentials.
func (l Lake) RESTCatalogKeys() map[string]string {
	keys := l.S3Keys()
	keys["iceberg.catalog.type"] = "rest"
	keys["iceberg.catalog.uri"] = l.RESTURI
	keys["iceberg.catalog.credential"] = l.RESTCredential
	keys["iceberg.catalog.warehouse"] = l.RESTWarehouse
	return keys
}

// PostgresS3Keys are the connector keys of a SQL catalog in Postgres
// whose warehouse is warehouse (an s3:// location in the store).
func (l Lake) PostgresS3Keys(postgresURL, warehouse string) map[string]string {
	keys := l.S3Keys()
	keys["iceberg.catalog.type"] = "sql"
	keys["iceberg.catalog.uri"] = postgresURL
	keys["iceberg.catalog.warehouse"] = warehouse
	return keys
}

// RESTTable names a table of the REST catalog for the readers.
func (l Lake) RESTTable(name string) TableRef {
	lake := l
	return TableRef{CatalogType: "rest", CatalogURI: l.RESTURI, Credential: l.RESTCredential,
		Warehouse: l.RESTWarehouse, Name: name, S3: &lake}
}

// SQLTable names a table of a SQL catalog with an s3:// warehouse.
func (l Lake) SQLTable(catalogURI, warehouse, name string) TableRef {
	lake := l
	return TableRef{CatalogURI: catalogURI, Warehouse: warehouse, Name: name, S3: &lake}
}

// LocalPath is the file behind an s3:// location of the store.
func (l Lake) LocalPath(location string) string {
	return filepath.Join(l.S3Root, strings.TrimPrefix(location, "s3://"))
}

// Client is an S3 client of the store (path-style, the root user).
func (l Lake) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       l.S3Region,
		BaseEndpoint: aws.String(l.S3Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(l.S3AccessKey, l.S3SecretKey, ""),
	})
}

// ListObjects lists every key under an s3:// prefix through the S3 API
// (ListObjectsV2, page by page), as s3://bucket/key locations.
func (l Lake) ListObjects(ctx context.Context, prefix string) ([]string, error) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(prefix, "s3://"), "/")
	cl := l.Client()
	var out []string
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, key, err)
		}
		for _, o := range page.Contents {
			out = append(out, "s3://"+bucket+"/"+aws.ToString(o.Key))
		}
	}
	return out, nil
}

// S3Request is one line of the store's request log.
type S3Request struct {
	Status int
	Method string
	// Path is /bucket/key; Query the raw query string.
	Path, Query string
	// Took is how long the store took to serve it, as it logged (0 when
	// the line did not say).
	Took time.Duration
}

// Op names the S3 operation of a request, enough to count a task's work:
// GET (object), HEAD, PUT, LIST, DELETE (one object), DELETE-MULTI,
// MULTIPART (create, part, complete, abort).
func (r S3Request) Op() string {
	q := r.Query
	switch {
	case r.Method == "GET" && (strings.Contains(q, "list-type=") || strings.Count(r.Path, "/") == 1):
		return "LIST"
	case r.Method == "POST" && strings.HasPrefix(q, "delete"):
		return "DELETE-MULTI"
	case strings.Contains(q, "uploadId=") || strings.HasPrefix(q, "uploads"):
		return "MULTIPART"
	}
	return r.Method
}

// S3LogSize is the request log's size now: requests logged later are
// the ones S3Requests(from) returns.
func (l Lake) S3LogSize(t testing.TB) int64 {
	t.Helper()
	st, err := os.Stat(l.S3Log)
	if err != nil {
		t.Fatalf("harness: the object store's request log: %v", err)
	}
	return st.Size()
}

// S3Requests parses the request log from byte offset from (versitygw's
// line: time | vgw | status | duration | ip | method | path | - | query).
func (l Lake) S3Requests(t testing.TB, from int64) []S3Request {
	t.Helper()
	b, err := os.ReadFile(l.S3Log)
	if err != nil {
		t.Fatalf("harness: the object store's request log: %v", err)
	}
	if from > int64(len(b)) {
		from = 0 // the log was restarted
	}
	return parseS3Log(b[from:])
}

// s3LineStart is where a request's line begins: its time and the
// server's tag.
var s3LineStart = regexp.MustCompile(`\d\d:\d\d:\d\d \| vgw \|`)

func startsLine(s string) bool {
	loc := s3LineStart.FindStringIndex(s)
	return loc != nil && loc[0] == 0
}

// parseS3Log parses versitygw's request lines. A line may be torn by a
// concurrent write landing inside it: "… | GET" + "11:29:06 | vgw | …\n"
// + " | /path | - | query\n". Counted as they stand, the two requests
// would be one with the method "GET11:29:06" and a stray fragment, so
// both are recovered: a line start inside a line cuts it, and a line
// left short of its fields is completed by the next fragment that does
// not start a line.
func parseS3Log(b []byte) []S3Request {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		starts := s3LineStart.FindAllStringIndex(line, -1)
		prev := 0
		for _, st := range starts {
			if st[0] > prev {
				lines = append(lines, line[prev:st[0]])
			}
			prev = st[0]
		}
		lines = append(lines, line[prev:])
	}
	var records []string
	short := -1 // index in records of a line still missing fields
	for _, line := range lines {
		switch {
		case startsLine(line):
			records = append(records, line)
			if strings.Count(line, "|") < 8 {
				short = len(records) - 1
			}
		case short >= 0:
			records[short] += line
			if strings.Count(records[short], "|") >= 8 {
				short = -1
			}
		}
	}
	var out []S3Request
	for _, rec := range records {
		f := strings.Split(rec, "|")
		if len(f) < 9 || strings.TrimSpace(f[1]) != "vgw" {
			continue
		}
		status, err := strconv.Atoi(strings.TrimSpace(f[2]))
		method := strings.TrimSpace(f[5])
		if err != nil || method == "" || strings.ContainsFunc(method, func(r rune) bool { return r < 'A' || r > 'Z' }) {
			continue // torn beyond repair
		}
		took, _ := time.ParseDuration(strings.TrimSpace(f[3]))
		out = append(out, S3Request{Status: status, Method: method,
			Path: strings.TrimSpace(f[6]), Query: strings.TrimSpace(f[8]), Took: took})
	}
	return out
}

// CatalogRequest is one line of the REST catalog's request log.
type CatalogRequest struct {
	Method, Path string
	Status       int
	Took         time.Duration
}

// RESTLogSize is the REST catalog's log size now: requests logged later
// are the ones CatalogRequests(from) returns.
func (l Lake) RESTLogSize(t testing.TB) int64 {
	t.Helper()
	st, err := os.Stat(l.RESTLog)
	if err != nil {
		t.Fatalf("harness: the REST catalog's log: %v", err)
	}
	return st.Size()
}

// CatalogRequests parses the REST catalog's request lines from byte
// offset from ("request METHOD PATH STATUS 1.2ms", written by
// e2e/services/restcatalog).
func (l Lake) CatalogRequests(t testing.TB, from int64) []CatalogRequest {
	t.Helper()
	b, err := os.ReadFile(l.RESTLog)
	if err != nil {
		t.Fatalf("harness: the REST catalog's log: %v", err)
	}
	if from > int64(len(b)) {
		from = 0
	}
	var out []CatalogRequest
	for _, line := range strings.Split(string(b[from:]), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "request" {
			continue
		}
		status, err := strconv.Atoi(f[3])
		took, derr := time.ParseDuration(f[4])
		if err != nil || derr != nil {
			continue
		}
		out = append(out, CatalogRequest{Method: f[1], Path: f[2], Status: status, Took: took})
	}
	return out
}

// CountOps counts requests by S3Request.Op.
func CountOps(reqs []S3Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.Op()]++
	}
	return out
}

// PrivateLake is an object store and a REST catalog of a test's own, in a
// state folder of their own (e2e/services/up --no-kafka …), so the test
// may stop and start them without disturbing the shared services.
type PrivateLake struct {
	t testing.TB
	// Dir is the state folder; Lake describes the services.
	Dir  string
	Lake Lake
	// S3 and REST are the two processes.
	S3, REST *Service
	repo     string
}

// StartLake starts a private lake (a few seconds once e2e/services/up has
// cached its downloads) and stops it when the test ends; its state folder
// is kept when the test failed.
func StartLake(t testing.TB, env Env) *PrivateLake {
	t.Helper()
	if env.RepoDir == "" {
		t.Fatalf("harness: StartLake: cannot find the floe repository (e2e/services/up)")
	}
	dir, err := os.MkdirTemp("", "floe-lake-")
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	pl := &PrivateLake{t: t, Dir: dir, repo: env.RepoDir}
	t.Cleanup(pl.cleanup)
	start := time.Now()
	if out, err := runServices(env.RepoDir, dir, 10*time.Minute, "up", "--no-kafka", "--no-registry", "--no-postgres", "--no-python"); err != nil {
		t.Fatalf("harness: start a private lake in %s: %v\n%s", dir, err, out)
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatalf("harness: private lake: %v", err)
	}
	pl.Lake = Lake{
		S3Endpoint: vars["FLOE_S3_ENDPOINT"], S3Region: vars["FLOE_S3_REGION"], S3AccessKey: vars["FLOE_S3_ACCESS_KEY"],
		S3SecretKey: vars["FLOE_S3_SECRET_KEY"], S3Bucket: vars["FLOE_S3_BUCKET"], S3Root: vars["FLOE_S3_ROOT"], S3Log: vars["FLOE_S3_LOG"],
		RESTURI: vars["FLOE_REST_CATALOG_URI"], RESTCredential: vars["FLOE_REST_CATALOG_CREDENTIAL"], RESTToken: vars["FLOE_REST_CATALOG_TOKEN"],
		RESTWarehouse: vars["FLOE_REST_CATALOG_WAREHOUSE"], RESTLog: vars["FLOE_REST_CATALOG_LOG"],
	}
	s3pid, err1 := strconv.Atoi(vars["FLOE_S3_PID"])
	restpid, err2 := strconv.Atoi(vars["FLOE_REST_CATALOG_PID"])
	if err1 != nil || err2 != nil || pl.Lake.S3Endpoint == "" || pl.Lake.RESTURI == "" {
		t.Fatalf("harness: private lake: env file %s lacks the lake's pids or addresses", filepath.Join(dir, "env"))
	}
	proc := func(what, pidVar, logFile string, pid int) *service {
		return &service{t: t, what: what, dir: dir, logFile: logFile, pidVar: pidVar, repo: env.RepoDir, pid: pid}
	}
	pl.S3 = &Service{Name: "object store", LogFile: pl.Lake.S3Log, proc: proc("object store", "FLOE_S3_PID", pl.Lake.S3Log, s3pid),
		ready: func([]byte) bool { return httpAnswers(pl.Lake.S3Endpoint + "/") }}
	pl.REST = &Service{Name: "REST catalog", LogFile: pl.Lake.RESTLog, proc: proc("REST catalog", "FLOE_REST_CATALOG_PID", pl.Lake.RESTLog, restpid),
		ready: logSays("floe-rest-catalog ready on")}
	t.Logf("harness: private lake (object store pid %d at %s, REST catalog pid %d at %s) in %s",
		s3pid, pl.Lake.S3Endpoint, restpid, pl.Lake.RESTURI, time.Since(start).Round(time.Millisecond))
	return pl
}

func (pl *PrivateLake) cleanup() {
	out, err := runServices(pl.repo, pl.Dir, 2*time.Minute, "down")
	if err != nil {
		pl.t.Logf("harness: private lake: down: %v\n%s", err, out)
	}
	for _, s := range []*Service{pl.S3, pl.REST} {
		if s != nil {
			s.proc.kill()
		}
	}
	if pl.t.Failed() || os.Getenv("FLOE_E2E_KEEP") == "1" {
		pl.t.Logf("harness: private lake state kept in %s", pl.Dir)
		return
	}
	_ = os.RemoveAll(pl.Dir)
}

// Service is one process of a private lake that a test may stop and
// start again.
type Service struct {
	Name    string
	LogFile string
	proc    *service
	// ready tells that the restarted service serves, given its log since
	// the restart.
	ready func(log []byte) bool
}

// PID is the service's pid now.
func (s *Service) PID() int { return s.proc.pid }

// Stop sends sig to the service and waits until it is gone.
func (s *Service) Stop(sig syscall.Signal) { s.proc.t.Helper(); s.proc.stop(sig) }

// Start runs the stopped service again with the command line, working
// folder and environment up gave it, appending to its log, and waits
// until it serves.
func (s *Service) Start() { s.proc.t.Helper(); s.proc.start(s.ready) }

// httpAnswers tells whether anything answers HTTP at url.
func httpAnswers(url string) bool {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// The service addresses and placeholders configs/*.json use, which
// [LocalizeExample] replaces with the running services'.
const (
	exampleKafka    = "127.0.0.1:9092"
	exampleRegistry = "http://127.0.0.1:8081"
	examplePostgres = "postgres://floe@127.0.0.1:5432/catalog"
	exampleREST     = "http://127.0.0.1:8181"
	exampleS3       = "http://127.0.0.1:9000"
	exampleBucket   = "s3://lake/"
)

// LocalizeExample returns an example connector config (configs/*.json)
// pointed at the services of env: the examples' conventional addresses
// (Kafka 127.0.0.1:9092, registry :8081, Postgres :5432, REST catalog
// :8181, S3 :9000, bucket s3://lake/) and their placeholder credentials
// become the running services' and the test credentials. missing names
// the services the example needs that env lacks (empty: ready to run).
func LocalizeExample(env Env, config map[string]string) (out map[string]string, missing []string) {
	out = make(map[string]string, len(config))
	need := func(what string, have bool) {
		if !have && !slices.Contains(missing, what) {
			missing = append(missing, what)
		}
	}
	for k, v := range config {
		switch {
		case strings.Contains(v, exampleKafka):
			need("Kafka (FLOE_KAFKA_BOOTSTRAP)", env.KafkaBootstrap != "")
			v = strings.ReplaceAll(v, exampleKafka, env.KafkaBootstrap)
		case v == exampleRegistry:
			need("a schema registry (FLOE_SCHEMA_REGISTRY_URL)", env.SchemaRegistryURL != "")
			v = env.SchemaRegistryURL
		case v == examplePostgres:
			need("Postgres (FLOE_POSTGRES_URL)", env.PostgresURL != "")
			v = env.PostgresURL
		case v == exampleREST:
			need("the REST catalog (FLOE_REST_CATALOG_URI)", env.Lake.RESTURI != "")
			v = env.Lake.RESTURI
		case v == exampleS3:
			need("the object store (FLOE_S3_ENDPOINT)", env.Lake.S3Endpoint != "")
			v = env.Lake.S3Endpoint
		}
		switch k {
		case "iceberg.catalog.credential":
			v = env.Lake.RESTCredential
		case "iceberg.catalog.s3.access-key-id":
			v = env.Lake.S3AccessKey
		case "iceberg.catalog.s3.secret-access-key":
			v = env.Lake.S3SecretKey
		case "iceberg.catalog.s3.region":
			v = env.Lake.S3Region
		case "iceberg.catalog.warehouse":
			if strings.HasPrefix(v, exampleBucket) {
				v = "s3://" + env.Lake.S3Bucket + "/" + strings.TrimPrefix(v, exampleBucket)
			}
		}
		out[k] = v
	}
	// A REST catalog serves the warehouse it was set up with.
	if out["iceberg.catalog.type"] == "rest" && out["iceberg.catalog.uri"] == env.Lake.RESTURI {
		out["iceberg.catalog.warehouse"] = env.Lake.RESTWarehouse
	}
	return out, missing
}
