package partitioners

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/lake/partspec"
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
			if err := partspec.CheckColumn(f); err != nil {
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

// parsePartitionBy reads a partition spec with the iceberg sink's own
// parser (lake/partspec), so both accept the same specs. Void terms are
// dropped: they put every row in the same partition.
func parsePartitionBy(spec string) ([]keyTerm, error) {
	parsed, err := partspec.Parse(spec)
	if err != nil {
		return nil, err
	}
	var terms []keyTerm
	for _, t := range parsed {
		if !t.IsVoid() {
			terms = append(terms, keyTerm{text: t.Text, path: t.Column, tf: t.Transform})
		}
	}
	return terms, nil
}
