package iceberg

import (
	"fmt"
	"strconv"
	"strings"

	icebergapi "github.com/apache/iceberg-go"
)

// partitionTerm is one parsed partition-by entry: "day(ts)",
// "bucket(16, id)", "country".
type partitionTerm struct {
	transform string // identity, year, month, day, hour, bucket, truncate
	param     int    // bucket count or truncate width
	column    string // source column, dotted for nested fields
}

func (t partitionTerm) String() string {
	switch t.transform {
	case "bucket", "truncate":
		return fmt.Sprintf("%s(%d, %s)", t.transform, t.param, t.column)
	default:
		return fmt.Sprintf("%s(%s)", t.transform, t.column)
	}
}

// icebergTransform returns the Iceberg transform of the term.
func (t partitionTerm) icebergTransform() icebergapi.Transform {
	switch t.transform {
	case "year":
		return icebergapi.YearTransform{}
	case "month":
		return icebergapi.MonthTransform{}
	case "day":
		return icebergapi.DayTransform{}
	case "hour":
		return icebergapi.HourTransform{}
	case "bucket":
		return icebergapi.BucketTransform{NumBuckets: t.param}
	case "truncate":
		return icebergapi.TruncateTransform{Width: t.param}
	default:
		return icebergapi.IdentityTransform{}
	}
}

// fieldName is the partition field's name, following Spark's naming.
func (t partitionTerm) fieldName() string {
	col := strings.ReplaceAll(t.column, ".", "_")
	switch t.transform {
	case "identity":
		return col
	case "truncate":
		return col + "_trunc"
	default:
		return col + "_" + t.transform
	}
}

// transformAliases maps accepted spellings (Spark's plural forms too) to
// transform names.
var transformAliases = map[string]string{
	"identity": "identity",
	"year":     "year", "years": "year",
	"month": "month", "months": "month",
	"day": "day", "days": "day", "date": "day",
	"hour": "hour", "hours": "hour",
	"bucket":   "bucket",
	"truncate": "truncate", "trunc": "truncate",
}

// parsePartitionBy parses a comma-separated partition spec:
// "day(ts), bucket(16, id), country".
func parsePartitionBy(s string) ([]partitionTerm, error) {
	var terms []partitionTerm
	seen := map[string]bool{}
	for _, raw := range splitTopLevel(s) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		t, err := parsePartitionTerm(raw)
		if err != nil {
			return nil, err
		}
		if seen[t.fieldName()] {
			return nil, fmt.Errorf("partition term %q repeats partition field %s", raw, t.fieldName())
		}
		seen[t.fieldName()] = true
		terms = append(terms, t)
	}
	return terms, nil
}

// splitTopLevel splits on commas that are not inside parentheses.
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
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

const partitionHelp = "expected col, identity(col), year(col), month(col), day(col), hour(col), bucket(N, col) or truncate(W, col)"

func parsePartitionTerm(raw string) (partitionTerm, error) {
	open := strings.IndexByte(raw, '(')
	if open < 0 {
		if !isColumnPath(raw) {
			return partitionTerm{}, fmt.Errorf("partition term %q: %s", raw, partitionHelp)
		}
		return partitionTerm{transform: "identity", column: raw}, nil
	}
	if !strings.HasSuffix(raw, ")") {
		return partitionTerm{}, fmt.Errorf("partition term %q: missing closing parenthesis; %s", raw, partitionHelp)
	}
	name := strings.ToLower(strings.TrimSpace(raw[:open]))
	transform, ok := transformAliases[name]
	if !ok {
		return partitionTerm{}, fmt.Errorf("partition term %q: unknown transform %q; %s", raw, name, partitionHelp)
	}
	args := strings.Split(raw[open+1:len(raw)-1], ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	switch transform {
	case "bucket", "truncate":
		if len(args) != 2 {
			return partitionTerm{}, fmt.Errorf("partition term %q: %s takes a number and a column, e.g. %s(16, id)", raw, transform, transform)
		}
		// Spark writes bucket(16, id); some tools write bucket(id, 16).
		num, col := args[0], args[1]
		if _, err := strconv.Atoi(num); err != nil {
			num, col = col, num
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			return partitionTerm{}, fmt.Errorf("partition term %q: %s needs a positive whole number, got %q", raw, transform, args[0])
		}
		if !isColumnPath(col) {
			return partitionTerm{}, fmt.Errorf("partition term %q: %q is not a column name", raw, col)
		}
		return partitionTerm{transform: transform, param: n, column: col}, nil
	default:
		if len(args) != 1 || !isColumnPath(args[0]) {
			return partitionTerm{}, fmt.Errorf("partition term %q: %s takes one column, e.g. %s(ts)", raw, transform, transform)
		}
		return partitionTerm{transform: transform, column: args[0]}, nil
	}
}

func isColumnPath(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || strings.ContainsAny(part, " ()\t,") {
			return false
		}
	}
	return true
}

// buildPartitionSpec binds terms to a schema.
func buildPartitionSpec(sc *icebergapi.Schema, terms []partitionTerm) (icebergapi.PartitionSpec, error) {
	if len(terms) == 0 {
		return *icebergapi.UnpartitionedSpec, nil
	}
	opts := make([]icebergapi.PartitionOption, 0, len(terms))
	for _, t := range terms {
		f, ok := sc.FindFieldByName(t.column)
		if !ok {
			return icebergapi.PartitionSpec{}, fmt.Errorf("partition by %s: the schema has no column %q", t, t.column)
		}
		tr := t.icebergTransform()
		if !tr.CanTransform(f.Type) {
			return icebergapi.PartitionSpec{}, fmt.Errorf("partition by %s: column %q is %s, which %s cannot partition", t, t.column, f.Type, t.transform)
		}
		opts = append(opts, icebergapi.AddPartitionFieldByName(t.column, t.fieldName(), tr, sc, nil))
	}
	spec, err := icebergapi.NewPartitionSpecOpts(opts...)
	if err != nil {
		return icebergapi.PartitionSpec{}, fmt.Errorf("partition spec: %w", err)
	}
	return spec, nil
}
