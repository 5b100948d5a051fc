package backends_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/floehq/floe/lake"
)

// closedPortWith301 returns a local port whose number holds "301" and
// that nothing listens on.
func closedPortWith301(t *testing.T) int {
	t.Helper()
	for _, p := range []int{30101, 30199, 43010, 49301, 53011, 63010, 13010, 23010} {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p
	}
	t.Skip("every candidate port holding 301 is in use")
	return 0
}

// gocloud's S3 driver calls any failed call whose message holds "301" a
// missing bucket; a store that is down at such a port must still read as
// unreachable (a task waits for it), not as a bucket to create (the
// connector fails).
func TestCheckWarehouseDownStoreAtA301Port(t *testing.T) {
	endpoint := "http://127.0.0.1:" + strconv.Itoa(closedPortWith301(t))
	c := s3Catalog(endpoint, nil)
	c.Warehouse = "s3://floe-lake/rest"
	err := lake.CheckWarehouse(context.Background(), c)
	if !errors.Is(err, lake.ErrUnreachable) {
		t.Fatalf("CheckWarehouse with the store down at %s = %v; want it unreachable", endpoint, err)
	}
	if strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a down store read as a missing bucket: %v", err)
	}
}
