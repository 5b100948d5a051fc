package schemas
import _ "github.com/uptrace/bun/driver/sqliteshim"
