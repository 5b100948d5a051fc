package harness

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/plugins/datagen/generate"
)

// Datagen knows, without reading any table, which records a datagen
// connector generates: the same generator (package generate) with the
// same options as the plugin, so a test can compute what a table must
// hold.
type Datagen struct {
	// Partitions is the number of source partitions; partition p is named
	// <Name>/<p>.
	Partitions int
	// Name prefixes the partition names (the shape, or the schema's
	// record name).
	Name string
	// Counts is each partition's record count when datagen.count is set
	// (nil when unbounded).
	Counts []int64
	opts   generate.Options
	schema string
}

// DatagenFor interprets a datagen connector config as the plugin does:
// the plugin's declared defaults (asked from `floe plugins describe
// datagen`, so a changed default cannot go unnoticed) under the config's
// keys.
func DatagenFor(t testing.TB, env Env, config map[string]string) *Datagen {
	t.Helper()
	res := RunFloe(t, env, "", 2*time.Minute, "plugins", "describe", "datagen", "--plugin-path", env.PluginDir(), "--json")
	if res.Code != 0 {
		t.Fatalf("harness: floe plugins describe datagen: exit %d: %s", res.Code, res.Output())
	}
	var desc []struct {
		Keys []struct {
			Name    string  `json:"name"`
			Default *string `json:"default"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &desc); err != nil || len(desc) != 1 {
		t.Fatalf("harness: floe plugins describe datagen --json: %v: %s", err, res.Stdout)
	}
	cfg := map[string]string{}
	for _, k := range desc[0].Keys {
		if k.Default != nil {
			cfg[k.Name] = *k.Default
		}
	}
	for k, v := range config {
		cfg[k] = v
	}
	num := func(key string) int64 {
		v := strings.TrimSpace(cfg[key])
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("harness: datagen config %s=%q: %v", key, v, err)
		}
		return n
	}
	d := &Datagen{Partitions: int(num("datagen.partitions"))}
	if d.Partitions == 0 {
		d.Partitions = max(int(num("tasks.max")), 1)
	}
	if file := cfg["datagen.schema.file"]; file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("harness: %v", err)
		}
		d.schema = string(b)
	} else {
		d.Name = cfg["datagen.shape"]
		js, err := generate.ShapeSchema(d.Name)
		if err != nil {
			t.Fatalf("harness: %v", err)
		}
		d.schema = js
	}
	start, err := time.Parse(time.RFC3339, strings.TrimSpace(cfg["datagen.timestamp.start"]))
	if err != nil {
		t.Fatalf("harness: datagen.timestamp.start: %v", err)
	}
	zipf, _ := strconv.ParseFloat(cfg["datagen.key.zipf.s"], 64)
	d.opts = generate.Options{
		Seed:           uint64(num("datagen.seed")),
		KeyField:       strings.TrimSpace(cfg["datagen.key.field"]),
		KeyCardinality: int(num("datagen.key.cardinality")),
		KeySkew:        generate.Skew(cfg["datagen.key.skew"]),
		ZipfS:          zipf,
		TimestampStart: start,
		TimestampStep:  time.Duration(num("datagen.timestamp.step.ms")) * time.Millisecond,
	}
	g := d.generator(t)
	if d.Name == "" {
		d.Name = g.Schema().Name()
	}
	if count := num("datagen.count"); count > 0 {
		d.Counts = make([]int64, d.Partitions)
		for p := range d.Counts {
			d.Counts[p] = count / int64(d.Partitions)
			if int64(p) < count%int64(d.Partitions) {
				d.Counts[p]++
			}
		}
	}
	return d
}

func (d *Datagen) generator(t testing.TB) *generate.Generator {
	t.Helper()
	s, err := generate.Parse(d.schema)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	g, err := generate.New(s, d.opts)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return g
}

// PartitionName is the source partition name of partition p.
func (d *Datagen) PartitionName(p int) string { return d.Name + "/" + strconv.Itoa(p) }

// Checksums computes, over the records [0, ends[p]) of every partition p,
// what read_table.py's --checksum-col prints for each column of cols: the
// exact sum of an integer column, the [HashSum] of a string or
// timestamp column. Only top-level value columns are supported.
func (d *Datagen) Checksums(t testing.TB, ends []int64, cols ...string) map[string]string {
	t.Helper()
	g := d.generator(t)
	schema := g.ArrowSchema()
	idx := make([]int, len(cols))
	sums := make([]*big.Int, len(cols))
	hashes := make([]*HashSum, len(cols))
	for i, c := range cols {
		is := schema.FieldIndices(c)
		if len(is) != 1 {
			t.Fatalf("harness: datagen schema has no top-level column %q", c)
		}
		idx[i] = is[0]
		switch schema.Field(is[0]).Type.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			sums[i] = new(big.Int)
		case arrow.STRING, arrow.TIMESTAMP:
			hashes[i] = &HashSum{}
		default:
			t.Fatalf("harness: checksum of datagen column %s of type %s is not supported", c, schema.Field(is[0]).Type)
		}
	}
	const chunk = 50_000
	for p, end := range ends {
		for from := int64(0); from < end; from += chunk {
			n := int(min(chunk, end-from))
			rec := g.NewRecordBatch(memory.DefaultAllocator, p, from, n)
			for i := range cols {
				addColumn(rec.Column(idx[i]), sums[i], hashes[i])
			}
			rec.Release()
		}
	}
	out := map[string]string{}
	for i, c := range cols {
		if sums[i] != nil {
			out[c] = sums[i].String()
		} else {
			out[c] = hashes[i].Hex()
		}
	}
	return out
}

func addColumn(col arrow.Array, sum *big.Int, h *HashSum) {
	var tmp big.Int
	switch a := col.(type) {
	case *array.Int64:
		for i := range a.Len() {
			if a.IsValid(i) {
				sum.Add(sum, tmp.SetInt64(a.Value(i)))
			}
		}
	case *array.Int32:
		for i := range a.Len() {
			if a.IsValid(i) {
				sum.Add(sum, tmp.SetInt64(int64(a.Value(i))))
			}
		}
	case *array.String:
		for i := range a.Len() {
			if a.IsNull(i) {
				h.AddNull()
			} else {
				h.AddString(a.Value(i))
			}
		}
	case *array.Timestamp:
		scale := map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}[a.DataType().(*arrow.TimestampType).Unit]
		for i := range a.Len() {
			if a.IsNull(i) {
				h.AddNull()
			} else {
				h.AddInt64(int64(a.Value(i)) * scale)
			}
		}
	default:
		panic(fmt.Sprintf("harness: column type %s", col.DataType()))
	}
}

// AddInt64 adds a value whose canonical bytes are an int64 little-endian
// (read_table.py's dates, times and timestamps, the latter in
// nanoseconds).
func (h *HashSum) AddInt64(v int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	h.Add(b[:])
}
