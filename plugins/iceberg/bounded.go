package iceberg

import (
	"context"
	"fmt"
	"time"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// boundCatalog bounds each table load, creation and commit of cat to
// timeout (iceberg.commit.request-timeout-ms). iceberg-go's REST client
// sets no timeout of its own (its http.Client has none, nor has its
// transport), so a catalog that accepts the connection and never answers
// would hold a commit, and with it the connector, for as long as the
// task lives. A request cut short fails with an error wrapping
// context.DeadlineExceeded, which the commit treats as the catalog
// unavailable: it reloads the table and looks for its checkpoint before
// anything is retried, since the catalog may have applied the commit
// whose answer never came.
//
// Wrap it inside keepLists, so that the tables keepLists rebuilds (whose
// commits call the outer catalog's CommitTable) still go through it.
func boundCatalog(cat catalog.Catalog, timeout time.Duration) catalog.Catalog {
	if timeout <= 0 {
		return cat
	}
	return &boundedCatalog{Catalog: cat, timeout: timeout}
}

type boundedCatalog struct {
	catalog.Catalog
	timeout time.Duration
}

// bound returns ctx limited to one request, and the error to return when
// that limit, not ctx, ended err's request.
func (c *boundedCatalog) bound(ctx context.Context) (context.Context, func(error) error, context.CancelFunc) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	explain := func(err error) error {
		if err != nil && ctx.Err() == nil && rctx.Err() != nil {
			return fmt.Errorf("the catalog did not answer within %s (%s): %w", c.timeout, keyRequestTimeout, err)
		}
		return err
	}
	return rctx, explain, cancel
}

func (c *boundedCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	rctx, explain, cancel := c.bound(ctx)
	defer cancel()
	tbl, err := c.Catalog.LoadTable(rctx, id)
	return tbl, explain(err)
}

func (c *boundedCatalog) CreateTable(ctx context.Context, id table.Identifier, sc *icebergapi.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	rctx, explain, cancel := c.bound(ctx)
	defer cancel()
	tbl, err := c.Catalog.CreateTable(rctx, id, sc, opts...)
	return tbl, explain(err)
}

func (c *boundedCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	rctx, explain, cancel := c.bound(ctx)
	defer cancel()
	md, loc, err := c.Catalog.CommitTable(rctx, id, reqs, updates)
	return md, loc, explain(err)
}

// Close closes the catalog it wraps, if that has a Close.
func (c *boundedCatalog) Close() error {
	if cl, ok := c.Catalog.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}
