package sdk

import (
	"errors"
	"fmt"
	"testing"
)

func TestRejectionReason(t *testing.T) {
	for err, want := range map[error]string{
		RejectSchema("column a: int to string"):                                         "column a: int to string",
		fmt.Errorf("iceberg sink: table t: %w: %w", ErrSchemaRejected, errors.New("x")): "iceberg sink: table t: x",
		fmt.Errorf("plugin p: %w", RejectSchema("table t: %s", RejectSchema("x"))):      "plugin p: table t: x",
		ErrSchemaRejected: "schema rejected", // nothing but the sentinel
	} {
		if got := RejectionReason(err); got != want {
			t.Errorf("RejectionReason(%q) = %q, want %q", err, got, want)
		}
	}
}
