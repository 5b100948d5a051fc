// Command floe-plugin-iceberg-maintenance is floe's Iceberg table
// maintenance plugin. floe starts it, in its own process with the limits
// of the connector's process.maintenance.* keys; it does not run on its own.
package main

import (
	_ "github.com/floehq/floe/lake/backends" // rest, glue, hive, hadoop catalogs; s3, gs, abfs storage
	"github.com/floehq/floe/plugins/maintenance"
	"github.com/floehq/floe/sdk"
)

func main() { sdk.Serve(maintenance.Component()) }
