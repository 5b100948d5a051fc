package generate

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
)

//go:embed shapes/*.avsc
var shapeFiles embed.FS

// Built-in shapes.
const (
	ShapeOrders      = "orders"
	ShapeClickstream = "clickstream"
)

// Shapes returns the names of the built-in shapes, sorted.
func Shapes() []string {
	entries, _ := shapeFiles.ReadDir("shapes")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".avsc"))
	}
	slices.Sort(names)
	return names
}

// ShapeSchema returns the Avro schema JSON of a built-in shape.
func ShapeSchema(name string) (string, error) {
	b, err := shapeFiles.ReadFile(path.Join("shapes", name+".avsc"))
	if err != nil || strings.ContainsAny(name, "/.") {
		return "", fmt.Errorf("generate: unknown shape %q (built-in shapes: %s)", name, strings.Join(Shapes(), ", "))
	}
	return string(b), nil
}

// Parse parses Avro schema JSON into a schema of its own: named types are
// cached per call, so two schemas declaring the same names never clash.
func Parse(schemaJSON string) (avro.Schema, error) {
	s, err := avro.ParseWithCache(schemaJSON, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("generate: parse Avro schema: %w", err)
	}
	return s, nil
}

// ForShape compiles a generator for a built-in shape.
func ForShape(name string, opts Options) (*Generator, error) {
	js, err := ShapeSchema(name)
	if err != nil {
		return nil, err
	}
	s, err := Parse(js)
	if err != nil {
		return nil, fmt.Errorf("generate: shape %s: %w", name, err)
	}
	return New(s, opts)
}
