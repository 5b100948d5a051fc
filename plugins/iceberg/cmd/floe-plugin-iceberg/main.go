// Command floe-plugin-iceberg is floe's Apache Iceberg sink plugin. floe
// starts it; it does not run on its own.
package main

import (
	_ "github.com/floehq/floe/lake/backends" // rest, glue, hive, hadoop catalogs; s3, gs, abfs storage
	"github.com/floehq/floe/plugins/iceberg"
	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(iceberg.Component())
}
