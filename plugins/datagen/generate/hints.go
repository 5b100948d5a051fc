package generate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Schema properties that steer generation. They are ordinary Avro custom
// attributes, so a schema carrying them stays a valid schema for every
// other tool. They may sit on a field (then they apply to the field's type,
// through a nullable union) or on a type object.
const (
	// PropKey, on the top-level record, names the default key field.
	PropKey = "datagen.key"
	// PropMin and PropMax bound numbers (for decimals: the unscaled
	// value), string and bytes lengths, array and map sizes, the number
	// after PropPrefix, and the offset of a timestamp from the event time
	// in milliseconds. Both are inclusive.
	PropMin = "datagen.min"
	PropMax = "datagen.max"
	// PropNull is the probability (0..1) that a nullable union is null.
	PropNull = "datagen.null"
	// PropValues lists the strings a string field takes, uniformly.
	PropValues = "datagen.values"
	// PropKeys lists the keys a map draws from (distinct within a map).
	PropKeys = "datagen.keys"
	// PropPrefix and PropSuffix make a string prefix+number+suffix, the
	// number in [min, max] (either one alone is enough).
	PropPrefix = "datagen.prefix"
	PropSuffix = "datagen.suffix"
	// PropKind picks a string generator: "uuid" or "ipv4".
	PropKind = "datagen.kind"
)

// hints are the generation properties of one field or type.
type hints struct {
	min, max       float64
	hasMin, hasMax bool
	null           float64
	hasNull        bool
	values         []string
	keys           []string
	prefix, suffix string
	hasPrefix      bool
	kind           string
}

// propser is what hamba's fields and most schemas implement.
type propser interface{ Props() map[string]any }

// readHints overlays the properties of each source in order (later wins).
func readHints(path string, srcs ...any) (hints, error) {
	var h hints
	for _, src := range srcs {
		p, ok := src.(propser)
		if !ok {
			continue
		}
		for k, v := range p.Props() {
			var err error
			switch k {
			case PropMin:
				h.min, err = number(v)
				h.hasMin = true
			case PropMax:
				h.max, err = number(v)
				h.hasMax = true
			case PropNull:
				h.null, err = number(v)
				h.hasNull = true
				if err == nil && (h.null < 0 || h.null > 1) {
					err = fmt.Errorf("must be between 0 and 1")
				}
			case PropValues:
				h.values, err = stringList(v)
			case PropKeys:
				h.keys, err = stringList(v)
			case PropPrefix:
				h.prefix, h.hasPrefix = fmt.Sprint(v), true
			case PropSuffix:
				h.suffix, h.hasPrefix = fmt.Sprint(v), true
			case PropKind:
				h.kind = fmt.Sprint(v)
				if h.kind != "uuid" && h.kind != "ipv4" {
					err = fmt.Errorf("unknown kind %q (want uuid or ipv4)", h.kind)
				}
			}
			if err != nil {
				return hints{}, fmt.Errorf("field %s: property %s: %w", path, k, err)
			}
		}
	}
	if h.hasMin && h.hasMax && h.min > h.max {
		return hints{}, fmt.Errorf("field %s: %s %v is above %s %v", path, PropMin, h.min, PropMax, h.max)
	}
	return h, nil
}

// intRange returns [min, max] as integers, with defaults.
func (h hints) intRange(lo, hi int64) (int64, int64) {
	if h.hasMin {
		lo = clampInt(h.min)
	}
	if h.hasMax {
		hi = clampInt(h.max)
	}
	if hi < lo {
		hi = lo
	}
	if uint64(hi-lo) == math.MaxUint64 {
		hi-- // the whole int64 range: one value short keeps draws simple
	}
	return lo, hi
}

// floatRange returns [min, max] with defaults.
func (h hints) floatRange(lo, hi float64) (float64, float64) {
	if h.hasMin {
		lo = h.min
	}
	if h.hasMax {
		hi = h.max
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func clampInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func number(v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		return n, nil
	case float32:
		return float64(n), nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case json.Number:
		return n.Float64()
	case string:
		return strconv.ParseFloat(n, 64)
	}
	return 0, fmt.Errorf("want a number, got %T", v)
}

func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("want a non-empty list of strings")
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("item %d: want a string, got %T", i, x)
		}
		out[i] = s
	}
	return out, nil
}
