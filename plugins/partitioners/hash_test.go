package partitioners

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/sdk"
)

const day = int64(86400e3) // milliseconds

// dayBatch is a batch of n rows with ts (timestamp[ms], as Avro
// timestamp-millis decodes) over 30 days around now, and random ids.
func dayBatch(t testing.TB, seed uint64, n int) (b batchRows) {
	r := rand.New(rand.NewPCG(seed, 1))
	b.ts, b.id = make([]int64, n), make([]int64, n)
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range n {
		b.ts[i] = start - 15*day + r.Int64N(30*day)
		b.id[i] = r.Int64N(1_000_000) - 500_000
	}
	b.batch = newBatch(t, nil, int64Col("id", b.id), timestampCol("ts", arrow.Millisecond, b.ts))
	return b
}

type sdkBatch = sdk.Batch

type batchRows struct {
	ts, id []int64
	batch  sdkBatch
}

// TestHashDayPartitionOneWriter: every row of one day() partition, as
// iceberg-go computes it, goes to one writer, across batches and across
// partitioner instances.
func TestHashDayPartitionOneWriter(t *testing.T) {
	cfg := map[string]string{keyDefaultPartitionBy: "day(ts)"}
	dayOf, _ := iceberg.DayTransform{}.Transformer(iceberg.PrimitiveTypes.TimestampTz)
	writerOf := map[int32]uint32{}
	for inst := range 3 {
		task := open(t, "hash", 8, cfg)
		for seed := range uint64(3) {
			rows := dayBatch(t, seed, 2000)
			out := partition(t, task, rows.batch)
			for i, ms := range rows.ts {
				d := dayOf(iceberg.Timestamp(ms * 1000)).Val
				if w, ok := writerOf[d]; ok && w != out[i] {
					t.Fatalf("instance %d: day %d went to writers %d and %d", inst, d, w, out[i])
				}
				writerOf[d] = out[i]
			}
		}
	}
	if len(writerOf) < 25 {
		t.Fatalf("only %d days seen", len(writerOf))
	}
}

// TestHashBucketPartitionOneWriter: every row of one bucket(16, id)
// partition goes to one writer, bucket b to writer b mod 8, so each writer
// gets exactly two buckets. Kafka Connect's argument order means the same.
func TestHashBucketPartitionOneWriter(t *testing.T) {
	bucketOf := iceberg.BucketTransform{NumBuckets: 16}.Transformer(iceberg.PrimitiveTypes.Int64)
	for _, spec := range []string{"bucket(16, id)", "bucket(id, 16)", "BUCKET(16,id)"} {
		task := open(t, "hash", 8, map[string]string{keyDefaultPartitionBy: spec})
		rows := dayBatch(t, 7, 5000)
		out := partition(t, task, rows.batch)
		buckets := map[uint32]map[int32]bool{}
		for i, id := range rows.id {
			b := bucketOf(id).Val
			if out[i] != uint32(b)%8 {
				t.Fatalf("%s: id %d is in bucket %d, went to writer %d, want %d", spec, id, b, out[i], b%8)
			}
			if buckets[out[i]] == nil {
				buckets[out[i]] = map[int32]bool{}
			}
			buckets[out[i]][b] = true
		}
		for w := range uint32(8) {
			if len(buckets[w]) != 2 {
				t.Errorf("%s: writer %d has buckets %v, want two", spec, w, buckets[w])
			}
		}
	}
}

// TestHashDayAndBucket: with day(ts), bucket(16, id), each (day, bucket)
// partition has one writer, and the 16 buckets of one day spread over all
// 8 writers, two each.
func TestHashDayAndBucket(t *testing.T) {
	task := open(t, "hash", 8, map[string]string{keyDefaultPartitionBy: "day(ts), bucket(16, id)"})
	dayOf, _ := iceberg.DayTransform{}.Transformer(iceberg.PrimitiveTypes.TimestampTz)
	bucketOf := iceberg.BucketTransform{NumBuckets: 16}.Transformer(iceberg.PrimitiveTypes.Int64)
	type part struct{ day, bucket int32 }
	writerOf := map[part]uint32{}
	for seed := range uint64(4) {
		rows := dayBatch(t, seed, 5000)
		out := partition(t, task, rows.batch)
		for i := range out {
			p := part{dayOf(iceberg.Timestamp(rows.ts[i] * 1000)).Val, bucketOf(rows.id[i]).Val}
			if w, ok := writerOf[p]; ok && w != out[i] {
				t.Fatalf("partition %+v went to writers %d and %d", p, w, out[i])
			}
			writerOf[p] = out[i]
		}
	}
	perDay := map[int32][]int{}
	for p, w := range writerOf {
		if perDay[p.day] == nil {
			perDay[p.day] = make([]int, 8)
		}
		perDay[p.day][w]++
	}
	full := 0
	for d, counts := range perDay {
		sum := 0
		for _, c := range counts {
			sum += c
		}
		if sum < 16 {
			continue // a day at the edge of the range may miss a bucket
		}
		full++
		for w, c := range counts {
			if c != 2 {
				t.Errorf("day %d: writer %d has %d buckets, want 2 (%v)", d, w, c, counts)
			}
		}
	}
	if full < 20 {
		t.Fatalf("only %d days with all 16 buckets", full)
	}
}

// goldenKeys are the writers of keys k0…k15 over 8 writers. They pin the
// hash: a change moves keys between writers and must be deliberate.
var goldenKeys = []uint32{3, 6, 2, 3, 2, 4, 1, 3, 1, 3, 3, 2, 7, 0, 3, 1}

func keyWriters(t testing.TB) []uint32 {
	ids := make([]int, 16)
	for i := range ids {
		ids[i] = i
	}
	return partition(t, open(t, "hash", 8, nil), newBatch(t, keysOf(ids)))
}

func TestHashGolden(t *testing.T) {
	if got := keyWriters(t); !slices.Equal(got, goldenKeys) {
		t.Fatalf("key writers changed: got %v, want %v", got, goldenKeys)
	}
}

// TestHashStableAcrossProcesses runs the test binary again and compares
// its answers: nothing in the hash may depend on the process.
func TestHashStableAcrossProcesses(t *testing.T) {
	if os.Getenv("FLOE_PARTITIONERS_CHILD") == "1" {
		if err := json.NewEncoder(os.Stdout).Encode(keyWriters(t)); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHashStableAcrossProcesses$")
	cmd.Env = append(os.Environ(), "FLOE_PARTITIONERS_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	var child []uint32
	if err := json.Unmarshal([]byte(line), &child); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if got := keyWriters(t); !slices.Equal(got, child) {
		t.Fatalf("this process %v, child process %v", got, child)
	}
}

// TestHashKeyPaths: the fast path for keys without nulls, the general path
// with nulls, and partitioner.fields=__key agree on every non-null key;
// null keys take turns.
func TestHashKeyPaths(t *testing.T) {
	ids := make([]int, 1000)
	for i := range ids {
		ids[i] = i % 300
	}
	keys := keysOf(ids)
	withNulls := slices.Clone(keys)
	for i := 0; i < len(withNulls); i += 10 {
		withNulls[i] = nil
	}
	fast := partition(t, open(t, "hash", 7, nil), newBatch(t, keys))
	general := partition(t, open(t, "hash", 7, nil), newBatch(t, withNulls))
	byField := partition(t, open(t, "hash", 7, map[string]string{keyFields: "__key"}), newBatch(t, keys))
	nulls := make([]int, 7)
	for i := range keys {
		if fast[i] != byField[i] {
			t.Fatalf("row %d: fast path %d, partitioner.fields=__key %d", i, fast[i], byField[i])
		}
		if withNulls[i] == nil {
			nulls[general[i]]++
			continue
		}
		if fast[i] != general[i] {
			t.Fatalf("row %d: fast path %d, general path %d", i, fast[i], general[i])
		}
	}
	if mm := maxOverMean(nulls); mm > 1.1 {
		t.Errorf("null keys not spread evenly: %v", nulls)
	}
}

// TestHashWithoutKeys: a batch whose keys are all null, or that has no key
// column, is cut into contiguous runs, one per writer.
func TestHashWithoutKeys(t *testing.T) {
	for name, b := range map[string]sdkBatch{
		"null keys": newBatch(t, make([][]byte, 800)),
		"no keys":   newBatch(t, nil, int64Col("id", make([]int64, 800))),
	} {
		out := partition(t, open(t, "hash", 8, nil), b)
		for w := range 8 {
			run := out[w*100 : (w+1)*100]
			for _, x := range run {
				if x != run[0] {
					t.Fatalf("%s: run %d is not contiguous: %v", name, w, run)
				}
			}
		}
		seen := map[uint32]bool{}
		for _, x := range out {
			seen[x] = true
		}
		if len(seen) != 8 {
			t.Fatalf("%s: writers used %v", name, seen)
		}
	}
}

func TestHashUnknownField(t *testing.T) {
	task := open(t, "hash", 4, map[string]string{keyFields: "id, custid"})
	_, err := task.Partition(context.Background(), dayBatch(t, 1, 10).batch)
	if err == nil {
		t.Fatal("no error for an unknown field")
	}
	for _, want := range []string{keyFields, `"custid"`, "id, ts, __offset, __timestamp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	t.Log(err)

	task = open(t, "hash", 4, map[string]string{keyDefaultPartitionBy: "day(event_time)"})
	_, err = task.Partition(context.Background(), dayBatch(t, 1, 10).batch)
	if err == nil || !strings.Contains(err.Error(), keyDefaultPartitionBy) || !strings.Contains(err.Error(), `"event_time"`) {
		t.Errorf("partition spec naming a missing column: %v", err)
	}

	task = open(t, "hash", 4, map[string]string{keyDefaultPartitionBy: "day(id)"})
	_, err = task.Partition(context.Background(), dayBatch(t, 1, 10).batch)
	if err == nil || !strings.Contains(err.Error(), "day(id)") || !strings.Contains(err.Error(), "int64") {
		t.Errorf("day of an int column: %v", err)
	}
	t.Log(err)
}

// structBatch has a struct column customer{id int64, name string} and the
// same id as a top-level column.
func structBatch(t testing.TB, ids []int64, nullAt int) sdkBatch {
	mem := memory.DefaultAllocator
	st := arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true})
	sb := array.NewStructBuilder(mem, st)
	for i, id := range ids {
		if i == nullAt {
			sb.AppendNull() // appends nulls to the children too
			continue
		}
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(id)
		sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("n", id))
	}
	return newBatch(t, nil, column{"customer", sb.NewArray()}, int64Col("id", ids))
}

func TestHashNestedField(t *testing.T) {
	ids := make([]int64, 500)
	for i := range ids {
		ids[i] = int64(i % 37)
	}
	b := structBatch(t, ids, 3)
	nested := partition(t, open(t, "hash", 8, map[string]string{keyFields: "customer.id"}), b)
	top := partition(t, open(t, "hash", 8, map[string]string{keyFields: "id"}), b)
	for i := range ids {
		if i != 3 && nested[i] != top[i] {
			t.Fatalf("row %d: customer.id → %d, id → %d (same values)", i, nested[i], top[i])
		}
	}

	_, err := open(t, "hash", 8, map[string]string{keyFields: "customer.email"}).Partition(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), `"email"`) || !strings.Contains(err.Error(), "id, name") {
		t.Errorf("unknown nested field: %v", err)
	}
	t.Log(err)
	_, err = open(t, "hash", 8, map[string]string{keyFields: "id.x"}).Partition(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "not a struct") {
		t.Errorf("path into a non-struct: %v", err)
	}
}

// TestHashFields: several fields hash together, order matters, a
// dictionary-encoded column hashes like its plain form.
func TestHashFields(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	n := 2000
	a, c := make([]string, n), make([]int64, n)
	for i := range n {
		a[i] = fmt.Sprint("country-", r.IntN(20))
		c[i] = r.Int64N(5)
	}
	db := array.NewDictionaryBuilder(memory.DefaultAllocator, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	for _, s := range a {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	b := newBatch(t, nil, stringCol("country", a), column{"country_dict", db.NewArray()}, int64Col("tier", c))

	plain := partition(t, open(t, "hash", 8, map[string]string{keyFields: "country,tier"}), b)
	dict := partition(t, open(t, "hash", 8, map[string]string{keyFields: "country_dict, tier"}), b)
	if !slices.Equal(plain, dict) {
		t.Fatal("dictionary column hashes differently from its plain form")
	}
	writerOf := map[string]uint32{}
	for i := range n {
		k := fmt.Sprint(a[i], "/", c[i])
		if w, ok := writerOf[k]; ok && w != plain[i] {
			t.Fatalf("(%s) went to %d and %d", k, w, plain[i])
		}
		writerOf[k] = plain[i]
	}
	swapped := partition(t, open(t, "hash", 8, map[string]string{keyFields: "tier,country"}), b)
	if slices.Equal(plain, swapped) {
		t.Error("field order does not matter; it should (a composite key)")
	}
}

// TestHashEven: many distinct keys spread evenly.
func TestHashEven(t *testing.T) {
	ids := make([]int, 100_000)
	for i := range ids {
		ids[i] = i
	}
	out := partition(t, open(t, "hash", 8, nil), newBatch(t, keysOf(ids)))
	counts := make([]int, 8)
	for _, w := range out {
		counts[w]++
	}
	if mm := maxOverMean(counts); mm > 1.02 {
		t.Errorf("uniform keys: max/mean %.3f (%v)", mm, counts)
	}
}

// TestHashSchemaChange: batches of several schemas, alternating, each keep
// their own binding.
func TestHashSchemaChange(t *testing.T) {
	task := open(t, "hash", 8, map[string]string{keyFields: "id"})
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	b1 := newBatch(t, nil, int64Col("id", ids))
	b2 := newBatch(t, nil, stringCol("name", []string{"a", "b", "c", "d", "e", "f", "g", "h"}), int64Col("id", ids))
	first := partition(t, task, b1)
	// An int column widened to long keeps its rows' writers.
	narrow := array.NewInt32Builder(memory.DefaultAllocator)
	for _, id := range ids {
		narrow.Append(int32(id))
	}
	if got := partition(t, task, newBatch(t, nil, column{"id", narrow.NewArray()})); !slices.Equal(got, first) {
		t.Fatalf("int32 ids %v, int64 ids %v", got, first)
	}
	for range 3 {
		if got := partition(t, task, b2); !slices.Equal(got, first) {
			t.Fatalf("same ids, other schema: %v vs %v", got, first)
		}
		if got := partition(t, task, b1); !slices.Equal(got, first) {
			t.Fatalf("same batch twice: %v vs %v", got, first)
		}
	}
}

// TestHashConcurrent runs Partition from many goroutines at once (run with
// -race) and checks every answer against a sequential one.
func TestHashConcurrent(t *testing.T) {
	for _, cfg := range []map[string]string{nil, {keyDefaultPartitionBy: "day(ts), bucket(16, id)"}} {
		task := open(t, "hash", 8, cfg)
		batches := make([]sdkBatch, 8)
		want := make([][]uint32, 8)
		for i := range batches {
			rows := dayBatch(t, uint64(i), 1000)
			ids := make([]int, 1000)
			for j := range ids {
				ids[j] = int(rows.id[j])
			}
			batches[i] = newBatch(t, keysOf(ids), int64Col("id", rows.id), timestampCol("ts", arrow.Millisecond, rows.ts))
			want[i] = partition(t, task, batches[i])
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for r := range 20 {
					i := (g + r) % 8
					got, err := task.Partition(context.Background(), batches[i])
					if err != nil {
						t.Error(err)
						return
					}
					if !slices.Equal(got, want[i]) {
						t.Errorf("goroutine %d: batch %d answered differently", g, i)
						return
					}
				}
			})
		}
		wg.Wait()
		load := task.(interface{ Load() []float64 }).Load()
		if len(load) != 8 {
			t.Fatalf("Load has %d entries", len(load))
		}
	}
}

// goldenSpecs pin the hashing of composite keys and transformed values the
// way goldenKeys pins record keys.
var goldenSpecs = map[string][]uint32{
	keyFields + "=id,ts":                               {5, 3, 2, 6, 0, 3, 7, 1, 0, 4, 5, 2, 1, 1, 2, 3},
	keyDefaultPartitionBy + "=day(ts)":                 {3, 5, 4, 2, 1, 7, 5, 0, 5, 7, 2, 2, 4, 5, 0, 0},
	keyDefaultPartitionBy + "=day(ts), bucket(16, id)": {2, 3, 2, 7, 4, 6, 0, 3, 3, 0, 2, 2, 4, 7, 1, 2},
}

func TestHashGoldenSpecs(t *testing.T) {
	for spec, want := range goldenSpecs {
		key, value, _ := strings.Cut(spec, "=")
		got := partition(t, open(t, "hash", 8, map[string]string{key: value}), dayBatch(t, 99, 16).batch)
		if !slices.Equal(got, want) {
			t.Errorf("%s: writers changed: got %#v, want %#v", spec, got, want)
		}
	}
}

// TestColumns: each partitioner declares only the columns its key spec
// reads (sdk.PartitionerWithColumns), so the host sends nothing else; a
// dotted path declares every prefix, any of which may be the column.
func TestColumns(t *testing.T) {
	for _, tc := range []struct {
		component string
		config    map[string]string
		want      []string
	}{
		{"hash", nil, []string{"__key"}},
		{"hash", map[string]string{keyFields: "customer_id, region"}, []string{"customer_id", "region"}},
		{"hash", map[string]string{keyDefaultPartitionBy: "day(ts), bucket(16, id), identity(ts)"}, []string{"ts", "id"}},
		{"hash", map[string]string{keyFields: "address.city.name"}, []string{"address", "address.city", "address.city.name"}},
		{"skew-aware", map[string]string{keyDefaultPartitionBy: "hour(ts)"}, []string{"ts"}},
		{"roundrobin", nil, nil},
	} {
		task := open(t, tc.component, 4, tc.config)
		cols, ok := task.(sdk.PartitionerWithColumns)
		if !ok {
			t.Fatalf("%s %v: declares no columns", tc.component, tc.config)
		}
		if got := cols.Columns(); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: Columns() = %q, want %q", tc.component, tc.config, got, tc.want)
		}
	}
}
