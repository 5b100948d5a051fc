package partspec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// Term is one parsed term: "day(ts)", "bucket(16, id)", "country".
type Term struct {
	// Text is the term as the user wrote it, for errors.
	Text string
	// Column names the source column, dotted for nested fields.
	Column string
	// Transform is the Iceberg transform applied to the column.
	Transform iceberg.Transform
}

// String prints the term canonically: "bucket(16, id)", "day(ts)".
func (t Term) String() string {
	switch tf := t.Transform.(type) {
	case iceberg.BucketTransform:
		return fmt.Sprintf("bucket(%d, %s)", tf.NumBuckets, t.Column)
	case iceberg.TruncateTransform:
		return fmt.Sprintf("truncate(%d, %s)", tf.Width, t.Column)
	default:
		return fmt.Sprintf("%s(%s)", TransformName(t.Transform), t.Column)
	}
}

// FieldName is the partition field's name, following Spark's naming:
// country, ts_day, id_bucket, name_trunc, x_null.
func (t Term) FieldName() string {
	col := strings.ReplaceAll(t.Column, ".", "_")
	switch t.Transform.(type) {
	case iceberg.IdentityTransform:
		return col
	case iceberg.TruncateTransform:
		return col + "_trunc"
	case iceberg.VoidTransform:
		return col + "_null"
	default:
		return col + "_" + TransformName(t.Transform)
	}
}

// IsVoid reports a void(col) term: it puts every row in the same
// partition, so a partitioner may ignore it.
func (t Term) IsVoid() bool {
	_, ok := t.Transform.(iceberg.VoidTransform)
	return ok
}

// TransformName is a transform's name as users write it: bucket, not
// bucket[16].
func TransformName(tf iceberg.Transform) string {
	switch tf.(type) {
	case iceberg.BucketTransform:
		return "bucket"
	case iceberg.TruncateTransform:
		return "truncate"
	default:
		return tf.String() // identity, year, month, day, hour, void
	}
}

// Help lists the accepted terms, for a config key's description and errors.
const Help = "col, identity(col), year(col), month(col), day(col), hour(col), bucket(N, col), truncate(W, col) or void(col)"

// Parse reads a comma-separated partition spec: "day(ts), bucket(16, id),
// country". An empty or blank spec is no terms (unpartitioned). Errors
// quote the offending term.
func Parse(s string) ([]Term, error) {
	var terms []Term
	seen := map[string]string{}
	for _, raw := range splitTopLevel(s) {
		if raw == "" {
			continue
		}
		t, err := parseTerm(raw)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[t.FieldName()]; ok {
			return nil, fmt.Errorf("%q: repeats partition field %s of %q", raw, t.FieldName(), prev)
		}
		seen[t.FieldName()] = raw
		terms = append(terms, t)
	}
	return terms, nil
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

// transforms maps the accepted spellings (Spark's plurals, date, trunc) to
// the transforms that take one column.
var transforms = map[string]iceberg.Transform{
	"identity": iceberg.IdentityTransform{},
	"void":     iceberg.VoidTransform{},
	"year":     iceberg.YearTransform{}, "years": iceberg.YearTransform{},
	"month": iceberg.MonthTransform{}, "months": iceberg.MonthTransform{},
	"day": iceberg.DayTransform{}, "days": iceberg.DayTransform{}, "date": iceberg.DayTransform{},
	"hour": iceberg.HourTransform{}, "hours": iceberg.HourTransform{},
}

func parseTerm(raw string) (Term, error) {
	bad := func(format string, a ...any) (Term, error) {
		return Term{}, fmt.Errorf("%q: %s", raw, fmt.Sprintf(format, a...))
	}
	open := strings.IndexByte(raw, '(')
	if open < 0 {
		if err := CheckColumn(raw); err != nil {
			return bad("%v; expected %s", err, Help)
		}
		return Term{Text: raw, Column: raw, Transform: iceberg.IdentityTransform{}}, nil
	}
	if !strings.HasSuffix(raw, ")") {
		return bad("missing closing parenthesis; expected %s", Help)
	}
	name := strings.ToLower(strings.TrimSpace(raw[:open]))
	args := splitTopLevel(raw[open+1 : len(raw)-1])
	switch name {
	case "bucket", "truncate", "trunc":
		if name == "trunc" {
			name = "truncate"
		}
		if len(args) != 2 {
			return bad("%s takes a number and a column, as %s(16, id)", name, name)
		}
		num, col := args[0], args[1]
		if _, err := strconv.Atoi(num); err != nil {
			num, col = col, num // Kafka Connect's order: bucket(id, 16)
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			return bad("%s needs a whole number argument, got %q and %q", name, args[0], args[1])
		}
		if n <= 0 {
			return bad("%s needs a positive number, got %d", name, n)
		}
		if err := CheckColumn(col); err != nil {
			return bad("%v", err)
		}
		var tf iceberg.Transform = iceberg.BucketTransform{NumBuckets: n}
		if name == "truncate" {
			tf = iceberg.TruncateTransform{Width: n}
		}
		return Term{Text: raw, Column: col, Transform: tf}, nil
	}
	tf, ok := transforms[name]
	if !ok {
		return bad("unknown transform %q; expected %s", name, Help)
	}
	if len(args) != 1 {
		return bad("%s takes one column, as %s(ts); got %d arguments", name, name, len(args))
	}
	if err := CheckColumn(args[0]); err != nil {
		return bad("%v", err)
	}
	return Term{Text: raw, Column: args[0], Transform: tf}, nil
}

// CheckColumn rejects a column path that cannot name anything: empty,
// with an empty part (a..b) or with a character a term would split on.
func CheckColumn(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty column name")
	case strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, ".."):
		return fmt.Errorf("column path %q has an empty part", p)
	case strings.ContainsAny(p, "(), \t"):
		return fmt.Errorf("column path %q: unexpected character", p)
	}
	return nil
}

// Bind binds terms to a table schema: the partition spec a table created
// with them gets. No terms is the unpartitioned spec.
func Bind(sc *iceberg.Schema, terms []Term) (iceberg.PartitionSpec, error) {
	if len(terms) == 0 {
		return *iceberg.UnpartitionedSpec, nil
	}
	opts := make([]iceberg.PartitionOption, 0, len(terms))
	for _, t := range terms {
		f, ok := sc.FindFieldByName(t.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition by %s: the schema has no column %q", t, t.Column)
		}
		if !t.Transform.CanTransform(f.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition by %s: column %q is %s, which %s cannot partition", t, t.Column, f.Type, TransformName(t.Transform))
		}
		opts = append(opts, iceberg.AddPartitionFieldByName(t.Column, t.FieldName(), t.Transform, sc, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec: %w", err)
	}
	return spec, nil
}
