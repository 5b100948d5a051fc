package e2e

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

// TestKafkaKeyAndHeadersColumns runs Kafka records with an empty key, a
// null key and a binary key, and headers that repeat a key, hold a null,
// an empty and a binary value and an empty name, into a table with
// iceberg.tables.record-key-enabled and record-headers-enabled, and
// reads __key and __headers back with PyIceberg and DuckDB: each row
// must hold its record's key and headers as produced, an empty key apart
// from a null one, headers in order with repeats, null apart from empty
// (but for PyIceberg's known null-list bug, below).
func TestKafkaKeyAndHeadersColumns(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Readers)
	ctx := harness.Context(t, 5*time.Minute)
	topic := harness.UniqueName("e2e_record_columns")
	if err := harness.CreateTopic(ctx, env, topic, 1); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", dlqSchema)
	if err != nil {
		t.Fatal(err)
	}
	value := func(i int) []byte {
		b, err := avro.Marshal(avro.MustParse(dlqSchema), map[string]any{"id": int64(i), "memo": "m"})
		if err != nil {
			t.Fatal(err)
		}
		return harness.Frame(id, b)
	}
	headers := []harness.Header{
		{Key: "trace", Value: []byte("a")}, {Key: "trace", Value: []byte("b")},
		{Key: "nullh", Value: nil}, {Key: "emptyh", Value: []byte{}}, {Key: "bin", Value: []byte{0x00, 0xff}},
		{Key: "", Value: []byte("empty name")},
	}
	records := []harness.Record{
		{Key: []byte{}, Value: value(0), HeaderList: headers}, // empty key
		{Key: nil, Value: value(1)},                           // null key, no headers
		{Key: []byte{0x00, 0xff}, Value: value(2), HeaderList: []harness.Header{{Key: "z", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}},
		{Key: []byte("k"), Value: value(3), HeaderList: headers[2:3]}, // one null header
	}
	if sent, err := harness.Produce(ctx, env, topic, produceSeq(records)); err != nil || sent != len(records) {
		t.Fatalf("produce to %s: %d of %d delivered: %v", topic, sent, len(records), err)
	}

	name := harness.UniqueName("record-columns")
	table := "recordcols.events"
	conn := dlqConnector(env, name, topic, table, map[string]string{
		"tasks.max":                             "1",
		"iceberg.tables.record-key-enabled":     "true",
		"iceberg.tables.record-headers-enabled": "true",
	})
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	waitFrontier(t, ctx, f, name, topic, map[int32]int64{0: int64(len(records))})
	f.Stop()

	ref := harness.EmbeddedTable(f.DataDir, table)
	for _, engine := range harness.Engines {
		t.Run(string(engine), func(t *testing.T) {
			read := harness.ReadTable(t, env, engine, ref, harness.ReadOptions{ValuesCols: []string{"_source_offset", "__key", "__headers"}})
			if read.Rows != int64(len(records)) {
				t.Fatalf("%d rows, want %d", read.Rows, len(records))
			}
			seen := map[int64]bool{}
			for i := range read.Values["_source_offset"] {
				var off int64
				if err := json.Unmarshal(read.Values["_source_offset"][i], &off); err != nil || off < 0 || off >= int64(len(records)) || seen[off] {
					t.Fatalf("row %d: _source_offset %s (error %v), want each of 0..%d once", i, read.Values["_source_offset"][i], err, len(records)-1)
				}
				seen[off] = true
				want := records[off]
				key, err := readBytes(read.Values["__key"][i])
				if err != nil {
					t.Fatalf("offset %d: __key %s: %v", off, read.Values["__key"][i], err)
				}
				if got, w := showBytes(key), showBytes(want.Key); got != w {
					t.Errorf("offset %d: __key is %s, want %s", off, got, w)
				}
				hs, isNull, err := readHeaders(read.Values["__headers"][i])
				if err != nil {
					t.Fatalf("offset %d: __headers %s: %v", off, read.Values["__headers"][i], err)
				}
				if len(want.HeaderList) == 0 {
					// PyIceberg 0.12 reads a null list as an empty one
					// (apache/iceberg-python#3833, see read_table.py):
					// DuckDB's read checks the null.
					if !isNull && (engine != harness.PyIceberg || len(hs) != 0) {
						t.Errorf("offset %d: __headers is %s, want null (the record has none)", off, headerList(hs))
					}
					continue
				}
				if got, w := headerList(hs), headerList(want.HeaderList); got != w {
					t.Errorf("offset %d: __headers is %s, want %s", off, got, w)
				}
			}
		})
	}
}

// readBytes decodes read_table.py's {"hex": "…"} or null.
func readBytes(raw json.RawMessage) ([]byte, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var v struct {
		Hex *string `json:"hex"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if v.Hex == nil {
		return nil, errors.New(`not {"hex": …} or null`)
	}
	b, err := hex.DecodeString(*v.Hex)
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// readHeaders decodes a __headers value: a list of {"key", "value"}
// objects, or null.
func readHeaders(raw json.RawMessage) ([]harness.Header, bool, error) {
	if strings.TrimSpace(string(raw)) == "null" {
		return nil, true, nil
	}
	var entries []struct {
		Key   *string         `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, false, err
	}
	out := make([]harness.Header, len(entries))
	for i, e := range entries {
		if e.Key == nil {
			return nil, false, fmt.Errorf("entry %d has no key", i)
		}
		v, err := readBytes(e.Value)
		if err != nil {
			return nil, false, fmt.Errorf("entry %d value: %w", i, err)
		}
		out[i] = harness.Header{Key: *e.Key, Value: v}
	}
	return out, false, nil
}
