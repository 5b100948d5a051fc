package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/floehq/floe/e2e/harness"
)

// Tests of floe on the lake services: an S3-compatible object store
// (versitygw) and the Iceberg REST catalog on it (e2e/services/up starts
// both; e2e/services/README.md says why these). Tables are read back by
// PyIceberg through the REST (or SQL) catalog and by DuckDB from S3.

// TestLakeServices checks the object store implements what Iceberg on S3
// needs, through the AWS SDK floe's file IO uses: a multipart upload,
// ListObjectsV2 with pages and a prefix, DeleteObjects, and conditional
// writes (If-None-Match: * refuses to overwrite, If-Match with a stale
// ETag refuses).
func TestLakeServices(t *testing.T) {
	env := harness.Require(t, harness.LakeServices)
	ctx := harness.Context(t, time.Minute)
	cl := env.Lake.Client()
	bucket := aws.String(env.Lake.S3Bucket)
	prefix := harness.UniqueName("e2e-services") + "/"

	t.Run("multipart upload", func(t *testing.T) {
		key := aws.String(prefix + "big.bin")
		up, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		part1 := bytes.Repeat([]byte("a"), 5<<20) // S3's minimum part size
		part2 := []byte("tail")
		var parts []types.CompletedPart
		for i, body := range [][]byte{part1, part2} {
			n := int32(i + 1)
			res, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: bucket, Key: key, UploadId: up.UploadId,
				PartNumber: aws.Int32(n), Body: bytes.NewReader(body)})
			if err != nil {
				t.Fatalf("part %d: %v", n, err)
			}
			parts = append(parts, types.CompletedPart{ETag: res.ETag, PartNumber: aws.Int32(n)})
		}
		if _, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bucket, Key: key,
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
			t.Fatal(err)
		}
		head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := aws.ToInt64(head.ContentLength), int64(len(part1)+len(part2)); got != want {
			t.Fatalf("completed object has %d bytes, want %d", got, want)
		}
	})

	t.Run("ListObjectsV2 pages and DeleteObjects", func(t *testing.T) {
		for i := range 7 {
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprintf("%slist/%02d", prefix, i)),
				Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
		}
		var keys []types.ObjectIdentifier
		pages := 0
		p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: bucket, Prefix: aws.String(prefix + "list/"), MaxKeys: aws.Int32(3)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, o := range page.Contents {
				keys = append(keys, types.ObjectIdentifier{Key: o.Key})
			}
		}
		if len(keys) != 7 || pages != 3 {
			t.Fatalf("listed %d keys in %d pages of 3, want 7 in 3", len(keys), pages)
		}
		res, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bucket, Delete: &types.Delete{Objects: keys}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Deleted) != 7 || len(res.Errors) != 0 {
			t.Fatalf("DeleteObjects deleted %d, %d errors", len(res.Deleted), len(res.Errors))
		}
		left, err := env.Lake.ListObjects(ctx, "s3://"+env.Lake.S3Bucket+"/"+prefix+"list/")
		if err != nil || len(left) != 0 {
			t.Fatalf("after DeleteObjects: %v %v", left, err)
		}
	})

	t.Run("conditional writes", func(t *testing.T) {
		key := aws.String(prefix + "cond")
		first, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("v1"), IfNoneMatch: aws.String("*")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("v2"), IfNoneMatch: aws.String("*")})
		expectPreconditionFailed(t, "If-None-Match: * on an existing key", err)
		second, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("v2"), IfMatch: first.ETag})
		if err != nil {
			t.Fatalf("If-Match with the current ETag: %v", err)
		}
		_, err = cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("v3"), IfMatch: first.ETag})
		expectPreconditionFailed(t, "If-Match with a stale ETag", err)
		if aws.ToString(first.ETag) == aws.ToString(second.ETag) {
			t.Fatalf("two contents share ETag %s", aws.ToString(first.ETag))
		}
	})
}

func expectPreconditionFailed(t *testing.T, what string, err error) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("%s: got %v, want PreconditionFailed (412)", what, err)
	}
}

// TestLakeKafkaExactlyOnce runs Kafka → hash → iceberg (two tasks, a
// commit a second, two tables by route) on the lake, with the REST
// catalog (OAuth2 client credentials), with the REST catalog and a static
// bearer token (iceberg.catalog.token), and with the Postgres SQL catalog
// and an s3:// warehouse, with the catalog keys of the examples
// configs/kafka-rest-s3.json and configs/kafka-postgres-s3.json, while a
// feeder produces: each table must hold every produced record once, read
// by DuckDB from S3 and by PyIceberg through the catalog (a file missing
// from the bucket fails either read). The token, a secret, must show
// neither in the connector's config from the REST API nor in floe's log.
func TestLakeKafkaExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	for _, tc := range []struct {
		name, example         string
		postgresS3, restToken bool
	}{
		{name: "rest+s3", example: "configs/kafka-rest-s3.json"},
		{name: "rest+s3 token", restToken: true},
		{name: "postgres+s3", example: "configs/kafka-postgres-s3.json", postgresS3: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := harness.Context(t, 4*time.Minute)
			lake := env.Lake
			r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "lake",
				lake: &lake, postgresS3: tc.postgresS3, exampleFile: tc.example, restToken: tc.restToken})
			r.waitCommitted(ctx, r.committed(ctx)+1500)
			if tc.restToken {
				cfg, err := r.f.API.Config(ctx, r.opts.name)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range cfg {
					if strings.Contains(v, lake.RESTToken) {
						t.Errorf("GET /connectors/%s/config shows the token in %s", r.opts.name, k)
					}
				}
				if strings.Contains(r.f.Log(), lake.RESTToken) {
					t.Error("floe's log holds the REST catalog's token")
				}
			}
			for _, engine := range harness.Engines {
				res := r.check(ctx, engine, engine == harness.PyIceberg)
				t.Logf("%s: %s read %d rows (rare %d): lost %d, duplicated %d", tc.name, engine, res.rows, res.rareRows, res.lost, res.duplicated)
			}
			if _, err := r.feed.pause(ctx); err != nil {
				t.Fatal(err)
			}
			r.f.Stop()
		})
	}
}

// TestLakeCrashExactlyOnce runs TestCrashExactlyOnce's twelve cycles on
// the lake (REST catalog + S3): SIGKILL at every named crash point,
// iceberg.commit.after-catalog among them (the REST commit landed, the
// sink died before answering), and kill -9 of the host, the sink and the
// source at random moments; after each, every produced record once.
func TestLakeCrashExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 10*time.Minute)
	lake := env.Lake
	crashEveryPoint(t, ctx, rigOptions{env: env, partitions: 6, initial: 10_000, rate: 1000, name: "lakecrash", lake: &lake})
}

// lakeStack is where a test's tables go on the lake: the REST catalog, or
// (postgresURL set) the Postgres SQL catalog with an s3:// warehouse in
// the lake's bucket.
type lakeStack struct {
	lake        harness.Lake
	postgresURL string
}

// lakeStacks are the two stacks, by name, for subtests.
func lakeStacks(env harness.Env) []struct {
	name  string
	stack *lakeStack
} {
	return []struct {
		name  string
		stack *lakeStack
	}{
		{"rest+s3", &lakeStack{lake: env.Lake}},
		{"postgres+s3", &lakeStack{lake: env.Lake, postgresURL: env.PostgresURL}},
	}
}

// warehouse is the Postgres catalog's warehouse for namespace's tables.
func (s *lakeStack) warehouse(namespace string) string {
	return "s3://" + s.lake.S3Bucket + "/" + namespace
}

// keys are the connector's catalog keys for a table of namespace.
func (s *lakeStack) keys(namespace string) map[string]string {
	if s.postgresURL == "" {
		return s.lake.RESTCatalogKeys()
	}
	return s.lake.PostgresS3Keys(s.postgresURL, s.warehouse(namespace))
}

// table names table (namespace.name) for the readers.
func (s *lakeStack) table(table string) harness.TableRef {
	if s.postgresURL == "" {
		return s.lake.RESTTable(table)
	}
	namespace, _, _ := strings.Cut(table, ".")
	return s.lake.SQLTable(s.postgresURL, s.warehouse(namespace), table)
}
