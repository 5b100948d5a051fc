package harness

import (
	"reflect"
	"testing"
	"time"
)

// A line torn by a concurrent write is split back into its two requests,
// and neither is counted under a made-up op such as "GET11:29:06".
func TestParseS3LogTornLine(t *testing.T) {
	log := "No IAM service configured, enabling single account mode\n" +
		"11:29:05 | vgw | 200 |     1.2ms | 127.0.0.1 | PUT | /b/t/data/a.parquet | - | x-id=PutObject\n" +
		"11:29:05 | vgw | 206 |    300µs | 127.0.0.1 | GET" +
		"11:29:06 | vgw | 200 |     0.5ms | 127.0.0.1 | HEAD | /b/t/metadata/v1.metadata.json | - | \n" +
		" | /b/t/data/a.parquet | - | x-id=GetObject\n" +
		"11:29:06 | vgw | 200 |     0.9ms | 127.0.0.1 | POST | /b | - | delete=\n"
	got := parseS3Log([]byte(log))
	want := []S3Request{
		{Status: 200, Method: "PUT", Path: "/b/t/data/a.parquet", Query: "x-id=PutObject", Took: 1200 * time.Microsecond},
		{Status: 206, Method: "GET", Path: "/b/t/data/a.parquet", Query: "x-id=GetObject", Took: 300 * time.Microsecond},
		{Status: 200, Method: "HEAD", Path: "/b/t/metadata/v1.metadata.json", Query: "", Took: 500 * time.Microsecond},
		{Status: 200, Method: "POST", Path: "/b", Query: "delete=", Took: 900 * time.Microsecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", got, want)
	}
	ops := CountOps(got)
	if !reflect.DeepEqual(ops, map[string]int{"PUT": 1, "GET": 1, "HEAD": 1, "DELETE-MULTI": 1}) {
		t.Fatalf("ops = %v", ops)
	}
}
