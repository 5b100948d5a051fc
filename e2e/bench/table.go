package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// Catalog is a worker's embedded SQLite catalog (data.dir/catalog.db and
// data.dir/warehouse), opened from this process: the harness's readers
// shell out to Python, the benchmark needs the table's files as Go values.
type Catalog struct {
	cat   catalog.Catalog
	close func() error
}

// OpenEmbedded opens the embedded catalog of a worker's data.dir, as the
// iceberg sink opens it with no catalog keys. SQLite runs in WAL mode, so
// this reads while floe commits.
func OpenEmbedded(ctx context.Context, dataDir string) (*Catalog, error) {
	cat, closeFn, err := lake.OpenCatalog(ctx, lake.CatalogConfig{
		Type:      lake.CatalogSQL,
		Name:      lake.DefaultCatalogName,
		DataDir:   dataDir,
		Warehouse: "file://" + filepath.ToSlash(filepath.Join(dataDir, "warehouse")),
	})
	if err != nil {
		return nil, err
	}
	return &Catalog{cat: cat, close: closeFn}, nil
}

// Close releases the catalog.
func (c *Catalog) Close() error { return c.close() }

// Load loads namespace.table.
func (c *Catalog) Load(ctx context.Context, name string) (*table.Table, error) {
	ns, tbl, ok := strings.Cut(name, ".")
	if !ok {
		return nil, fmt.Errorf("table %q: want namespace.table", name)
	}
	return c.cat.LoadTable(ctx, table.Identifier{ns, tbl})
}

// Files describes a table's current snapshot: what a query engine has
// to open.
type Files struct {
	Snapshots int
	DataFiles int
	Bytes     int64
	Records   int64
	// Manifests are the current snapshot's data manifests.
	Manifests int
	// PerPartition counts live data files per partition (the partition
	// tuple printed as field-id=value pairs; "" when unpartitioned).
	PerPartition map[string]int
	// Sizes are the live data files' sizes per partition.
	Sizes map[string][]int64
	// MetadataBytes is the size of the current metadata.json.
	MetadataBytes int64
}

// MaxPerPartition is the file count of the fullest partition.
func (f Files) MaxPerPartition() int {
	m := 0
	for _, n := range f.PerPartition {
		m = max(m, n)
	}
	return m
}

// FullestSizes lists the fullest partition's file sizes in MiB, biggest
// first: which tiers and arrivals make up its count.
func (f Files) FullestSizes() string {
	var fullest []int64
	for _, sizes := range f.Sizes {
		if len(sizes) > len(fullest) {
			fullest = sizes
		}
	}
	fullest = slices.Clone(fullest)
	slices.SortFunc(fullest, func(a, b int64) int { return cmp.Compare(b, a) })
	parts := make([]string, len(fullest))
	for i, n := range fullest {
		parts[i] = strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64)
	}
	return strings.Join(parts, " ")
}

// MeanPerPartition is the mean file count over partitions with files.
func (f Files) MeanPerPartition() float64 {
	if len(f.PerPartition) == 0 {
		return 0
	}
	return float64(f.DataFiles) / float64(len(f.PerPartition))
}

// Inspect reads the current snapshot's manifest list and manifests.
func Inspect(ctx context.Context, tbl *table.Table) (Files, error) {
	out := Files{PerPartition: map[string]int{}, Sizes: map[string][]int64{}, Snapshots: len(tbl.Metadata().Snapshots())}
	if loc := strings.TrimPrefix(tbl.MetadataLocation(), "file://"); loc != "" {
		if st, err := os.Stat(loc); err == nil {
			out.MetadataBytes = st.Size()
		}
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return out, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return out, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return out, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != icebergapi.ManifestContentData {
			continue
		}
		out.Manifests++
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return out, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			df := e.DataFile()
			out.DataFiles++
			out.Bytes += df.FileSizeBytes()
			out.Records += df.Count()
			k := partitionKey(df.Partition())
			out.PerPartition[k]++
			out.Sizes[k] = append(out.Sizes[k], df.FileSizeBytes())
		}
	}
	return out, nil
}

func partitionKey(p map[int]any) string {
	if len(p) == 0 {
		return ""
	}
	ids := make([]int, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	// Few fields: insertion sort keeps it dependency-free.
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d=%v", id, p[id])
	}
	return b.String()
}

// Commit is one floe commit of a table.
type Commit struct {
	SnapshotID int64
	At         time.Time // the snapshot's timestamp
	Checkpoint uint64
	// Frontier is the sum of the committed next offsets (floe.offsets):
	// the records the table holds after this commit.
	Frontier     int64
	AddedFiles   int64
	AddedRecords int64
}

// Commits returns connector's commits in the table's current lineage,
// oldest first (compactions and other writers skipped).
func Commits(tbl *table.Table, connector string) ([]Commit, error) {
	var out []Commit
	for snap := tbl.CurrentSnapshot(); snap != nil; {
		c, ok, err := lake.ParseCommit(snap)
		if err != nil {
			return nil, err
		}
		if ok && c.Connector == connector {
			fc := Commit{SnapshotID: snap.SnapshotID, At: time.UnixMilli(snap.TimestampMs), Checkpoint: c.Checkpoint}
			for _, n := range c.Offsets {
				fc.Frontier += n
			}
			props := snap.Summary.Properties
			fc.AddedFiles, _ = strconv.ParseInt(props["added-data-files"], 10, 64)
			fc.AddedRecords, _ = strconv.ParseInt(props["added-records"], 10, 64)
			out = append(out, fc)
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = tbl.SnapshotByID(*snap.ParentSnapshotID)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// LiveFile is a data file of the current snapshot, the snapshot that
// added it and its data sequence number (which outlives that snapshot's
// expiry).
type LiveFile struct {
	Path       string
	SnapshotID int64
	Seq        int64
	Records    int64
}

// LiveFiles lists the current snapshot's data files. A file's entry
// keeps the id of the snapshot that added it (also in merged
// manifests, where it is EXISTING).
func LiveFiles(ctx context.Context, tbl *table.Table) ([]LiveFile, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, err
	}
	var out []LiveFile
	for _, m := range manifests {
		if m.ManifestContent() != icebergapi.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			out = append(out, LiveFile{Path: e.DataFile().FilePath(), SnapshotID: e.SnapshotID(), Seq: e.SequenceNum(), Records: e.DataFile().Count()})
		}
	}
	return out, nil
}

// ReadTimestamps calls fn with each value of a top-level timestamp
// column of a local Parquet data file, as the int64 it stores (for
// Iceberg: microseconds); nulls are skipped.
func ReadTimestamps(ctx context.Context, location, column string, fn func(v int64)) error {
	path := strings.TrimPrefix(strings.TrimPrefix(location, "file://"), "file:")
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return err
	}
	defer func() { _ = rdr.Close() }()
	idx := rdr.MetaData().Schema.ColumnIndexByName(column)
	if idx < 0 {
		return fmt.Errorf("%s: no column %s", path, column)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, []int{idx}, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		col, ok := rr.RecordBatch().Column(0).(*array.Timestamp)
		if !ok {
			return fmt.Errorf("%s: column %s is a %s, not a timestamp", path, column, rr.RecordBatch().Column(0).DataType())
		}
		for i := range col.Len() {
			if col.IsValid(i) {
				fn(int64(col.Value(i)))
			}
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
