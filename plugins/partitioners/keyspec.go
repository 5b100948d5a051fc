package partitioners

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/sdk"
)

// The sink's config keys the hash partitioners read (declared by
// sinkFields too, so the host hands them over).
const (
	keyTables             = "iceberg.tables"
	keyDefaultPartitionBy = "iceberg.tables.default-partition-by"
	prefixTable           = "iceberg.table."
)

// keyTerm is one part of the key a record is hashed by: a column (or a
// dotted path into struct columns) and the Iceberg transform applied to it
// before hashing.
type keyTerm struct {
	// text is the term as the user wrote it ("bucket(16, id)"), for errors.
	text string
	// path names the column: a top-level name or a dotted nested path.
	path string
	tf   iceberg.Transform
}

// keySpec says what a hash-based partitioner hashes. It is fixed at Open;
// binding it to a batch schema (see binding) happens per schema.
type keySpec struct {
	terms []keyTerm
	// from names where the terms came from, for errors: a config key, or
	// "the record key".
	from string
	// byKey: the only term is the record key, and records with a null (or
	// absent) key are spread round-robin instead of all going to one writer.
	byKey bool
	// bucket is the index of the only bucket transform in terms, or -1. Then
	// each bucket gets its own writer (see binding.home), which spreads
	// buckets evenly where hashing the bucket numbers would not.
	bucket int
}

// keySpecFrom reads what to hash from a connector config: the fields in
// partitioner.fields, else the table's partition spec, else the record key.
func keySpecFrom(cfg sdk.Config) (keySpec, error) {
	if fields := cfg.List(keyFields); len(fields) > 0 {
		ks := keySpec{from: keyFields, bucket: -1}
		for _, f := range fields {
			if err := checkPath(f); err != nil {
				return keySpec{}, fmt.Errorf("%s: %w", keyFields, err)
			}
			ks.terms = append(ks.terms, keyTerm{text: f, path: f, tf: iceberg.IdentityTransform{}})
		}
		ks.byKey = len(fields) == 1 && fields[0] == sdk.ColumnKey
		return ks, nil
	}
	key, spec := partitionBy(cfg)
	if spec != "" {
		terms, err := parsePartitionBy(spec)
		if err != nil {
			return keySpec{}, fmt.Errorf("%s: %w", key, err)
		}
		if len(terms) > 0 {
			ks := keySpec{terms: terms, from: key, bucket: -1}
			for i, t := range terms {
				if _, ok := t.tf.(iceberg.BucketTransform); ok {
					if ks.bucket >= 0 {
						ks.bucket = -1 // two bucket columns: hash them together
						break
					}
					ks.bucket = i
				}
			}
			return ks, nil
		}
	}
	return keySpec{
		terms:  []keyTerm{{text: sdk.ColumnKey, path: sdk.ColumnKey, tf: iceberg.IdentityTransform{}}},
		from:   "the record key",
		byKey:  true,
		bucket: -1,
	}, nil
}

// partitionBy returns the partition spec of the sink's table and the key it
// came from. A connector writing one table may set that table's own spec
// (iceberg.table.<name>.partition-by, as in the Kafka Connect Iceberg sink);
// otherwise the default for created tables applies.
func partitionBy(cfg sdk.Config) (key, spec string) {
	if tables := cfg.List(keyTables); len(tables) == 1 {
		key = prefixTable + tables[0] + ".partition-by"
		if spec = strings.TrimSpace(cfg.String(key)); spec != "" {
			return key, spec
		}
	}
	return keyDefaultPartitionBy, strings.TrimSpace(cfg.String(keyDefaultPartitionBy))
}

var transformCall = regexp.MustCompile(`^([A-Za-z_]+)\s*\((.*)\)$`)

// parsePartitionBy reads a partition spec as the Kafka Connect Iceberg sink
// writes it: a comma list of `col` (identity), `identity(col)`,
// `year(col)`, `month(col)`, `day(col)`, `hour(col)` (plural forms too),
// `bucket(N, col)`, `truncate(N, col)` and `void(col)`, plus the spellings
// the iceberg sink accepts (plurals, `date`, `trunc`). Bucket and truncate
// take their two arguments in either order (`bucket(col, N)` is Kafka
// Connect's, `bucket(N, col)` Spark SQL's). Void fields are dropped: they
// put every row in the same partition.
func parsePartitionBy(spec string) ([]keyTerm, error) {
	var terms []keyTerm
	for _, item := range splitTopLevel(spec) {
		if item == "" {
			continue
		}
		t, err := parseTerm(item)
		if err != nil {
			return nil, err
		}
		if _, void := t.tf.(iceberg.VoidTransform); !void {
			terms = append(terms, t)
		}
	}
	return terms, nil
}

func parseTerm(item string) (keyTerm, error) {
	m := transformCall.FindStringSubmatch(item)
	if m == nil {
		if err := checkPath(item); err != nil {
			return keyTerm{}, fmt.Errorf("%q: %w", item, err)
		}
		return keyTerm{text: item, path: item, tf: iceberg.IdentityTransform{}}, nil
	}
	name := strings.ToLower(m[1])
	// The iceberg sink's spellings: Spark's plurals, date and trunc.
	switch name {
	case "date":
		name = "day"
	case "trunc":
		name = "truncate"
	}
	args := splitTopLevel(m[2])
	bad := func(format string, a ...any) (keyTerm, error) {
		return keyTerm{}, fmt.Errorf("%q: %s", item, fmt.Sprintf(format, a...))
	}
	var tfText, col string
	switch name {
	case "identity", "void", "year", "years", "month", "months", "day", "days", "hour", "hours":
		if len(args) != 1 {
			return bad("%s takes one column, got %d arguments", name, len(args))
		}
		tfText, col = strings.TrimSuffix(name, "s"), args[0]
	case "bucket", "truncate":
		if len(args) != 2 {
			return bad("%s takes a number and a column, as %s(16, id)", name, name)
		}
		n, err := strconv.Atoi(args[0])
		col = args[1]
		if err != nil {
			if n, err = strconv.Atoi(args[1]); err != nil {
				return bad("%s needs a whole number argument, got %q and %q", name, args[0], args[1])
			}
			col = args[0]
		}
		if n <= 0 {
			return bad("%s needs a positive number, got %d", name, n)
		}
		tfText = fmt.Sprintf("%s[%d]", name, n)
	default:
		return bad("unknown transform %q (want identity, year, month, day, hour, bucket, truncate or void)", m[1])
	}
	if err := checkPath(col); err != nil {
		return bad("%v", err)
	}
	tf, err := iceberg.ParseTransform(tfText)
	if err != nil {
		return bad("%v", err)
	}
	if _, unknown := tf.(iceberg.UnknownTransform); unknown {
		return bad("unknown transform %q", tfText)
	}
	return keyTerm{text: item, path: col, tf: tf}, nil
}

// splitTopLevel splits s at the commas outside parentheses and trims the
// parts: "day(ts), bucket(16, id)" is ["day(ts)", "bucket(16, id)"].
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// checkPath rejects column paths that cannot name anything.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty column name")
	case strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, ".."):
		return fmt.Errorf("column path %q has an empty part", p)
	case strings.ContainsAny(p, "(), "):
		return fmt.Errorf("column path %q: unexpected character", p)
	}
	return nil
}
