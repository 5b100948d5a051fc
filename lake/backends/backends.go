// Package backends links iceberg-go's optional catalogs (rest, glue, hive,
// hadoop) and object stores (s3, gs, abfs) into a binary. Each registers
// itself by name when its package is initialised, so importing this
// package for its side effects is all it takes:
//
//	import _ "github.com/floehq/floe/lake/backends"
//
// The Iceberg plugin binaries and the floe binary import it. The sink's own package does not: the
// SQL catalog on SQLite or Postgres and local files need none of these,
// and leaving them out keeps the sink's tests quick to build (the AWS,
// Google Cloud and Azure SDKs double the binary's size).
package backends

import (
	_ "github.com/apache/iceberg-go/catalog/glue"     // catalog type "glue"
	_ "github.com/apache/iceberg-go/catalog/hadoop"   // catalog type "hadoop"
	_ "github.com/apache/iceberg-go/catalog/hive"     // catalog type "hive"
	_ "github.com/apache/iceberg-go/catalog/rest"     // catalog type "rest"
	_ "github.com/apache/iceberg-go/io/gocloud/azure" // abfs://, wasb:// warehouses
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"   // gs:// warehouses
	_ "github.com/apache/iceberg-go/io/gocloud/s3"    // s3:// warehouses
)
