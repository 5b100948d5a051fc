package schemas

import (
	_ "github.com/apache/iceberg-go/table"
	_ "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/hamba/avro/v2"
	_ "github.com/riferrei/srclient"
	_ "github.com/apache/arrow-go/v18/arrow/extensions"
)
