package maintenance

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/plugins/maintenance/stitch"
)

// A merge spends nearly all its time decoding and compressing again rows
// that are already in a Parquet file: a head that an earlier merge wrote
// at a good size, or the newest files that a tail merge only gathers.
// rewriteGroup copies those files' row groups as they are and rewrites
// only the group's other files, the way parquet-mr's appendRowGroups
// joins files.

// rewriteGroup rewrites one job's group into one file (or more, at the
// target size, when nothing can be copied).
func (rw *rewriter) rewriteGroup(ctx context.Context, j job) (table.CompactionGroupResult, error) {
	opts := table.WithCompactionTargetFileSize(rw.sel.target)
	rewrite, copies := rw.splitForCopy(j)
	if len(copies) == 0 {
		// Nothing to copy, or nothing to join it with.
		return rw.env.compact(ctx, j.tbl, j.g, opts)
	}

	// The copied row groups come first, the rewritten ones after them:
	// a file's row groups stay oldest (biggest) first, which is what
	// leading takes the trailing, newest ones from.
	parts := copies
	var scratch table.CompactionGroupResult
	if len(rewrite) > 0 {
		g := table.CompactionTaskGroup{PartitionKey: j.g.PartitionKey, Tasks: rewrite}
		for _, t := range rewrite {
			g.TotalSizeBytes += taskBytes(t)
		}
		var err error
		if scratch, err = rw.env.compact(ctx, j.tbl, g, opts); err != nil {
			return scratch, err
		}
		for _, df := range scratch.NewDataFiles {
			parts = append(parts, part{path: df.FilePath()})
		}
	}
	// The rewrite is only an input of the join.
	defer rw.discard([]table.CompactionGroupResult{scratch})

	df, err := rw.join(ctx, j, parts)
	if errors.Is(err, stitch.ErrIncompatible) {
		rw.env.log.Debug("rewriting the group's files instead of copying their row groups", "table", rw.planned.Identifier(), "partition", partitionLabel(j.g.PartitionKey), "reason", err)
		return rw.env.compact(ctx, j.tbl, j.g, opts)
	}
	if err != nil {
		return table.CompactionGroupResult{}, err
	}
	rw.mu.Lock()
	rw.copiedGroups++
	rw.copiedFiles += len(copies)
	for _, c := range copies {
		rw.copiedBytes += c.bytes
	}
	rw.mu.Unlock()

	old := make([]iceberg.DataFile, len(j.g.Tasks))
	for i, t := range j.g.Tasks {
		old[i] = t.File
	}
	return table.CompactionGroupResult{
		PartitionKey:        j.g.PartitionKey,
		OldDataFiles:        old,
		NewDataFiles:        []iceberg.DataFile{df},
		SafePosDeletes:      table.CollectSafePositionDeletes(j.g.Tasks),
		SafeDeletionVectors: table.CollectSafeDeletionVectors(j.g.Tasks),
		BytesBefore:         j.g.TotalSizeBytes,
		BytesAfter:          df.FileSizeBytes(),
	}, nil
}

// part is one input of a join: a Parquet file, and how many of its
// leading row groups to copy (0: all).
type part struct {
	path      string
	rowGroups int
	bytes     int64 // what is copied of it
}

// taskBytes is how much of its file a scan task reads.
func taskBytes(t table.FileScanTask) int64 {
	if t.Length > 0 {
		return t.Length
	}
	return t.File.FileSizeBytes()
}

// rowGroupSizes are the sizes of f's row groups in file order, from its
// split offsets (floe's writers and joins record them; the last one runs
// to the end of the file, footer included); a file without valid ones is
// one row group of its size, the least a Parquet file with rows holds.
func rowGroupSizes(f iceberg.DataFile) []int64 {
	offsets, size := f.SplitOffsets(), f.FileSizeBytes()
	valid := len(offsets) > 0
	for i, o := range offsets {
		if o < 4 || o >= size || (i > 0 && o <= offsets[i-1]) {
			valid = false
		}
	}
	if !valid {
		return []int64{size}
	}
	sizes := make([]int64, len(offsets))
	for i, o := range offsets {
		end := size
		if i+1 < len(offsets) {
			end = offsets[i+1]
		}
		sizes[i] = end - o
	}
	return sizes
}

// rowGroups is how many row groups f holds (see rowGroupSizes).
func rowGroups(f iceberg.DataFile) int { return len(rowGroupSizes(f)) }

// splitForCopy splits a job's files into what is rewritten (scan tasks:
// whole files, or the trailing row groups of a file whose leading ones
// are copied, as a byte range) and what is copied (parts, biggest file
// first), as selection.copyPlan says for whole Parquet files with no
// deletes to apply; nothing is copied when copyPlan copies nothing (with
// the tiered strategy, a group whose output is a finished file). Everything
// is rewritten, with the table's codec and full row groups, by the full
// compaction of an idle partition and by a forced run; and on a v3 table
// (row lineage is written with the rows).
func (rw *rewriter) splitForCopy(j job) (rewrite []table.FileScanTask, copies []part) {
	if rw.env.forced || rw.sel.idle[j.g.PartitionKey] || j.tbl.Metadata().Version() >= 3 {
		return j.g.Tasks, nil
	}
	facts := make([]fileFacts, len(j.g.Tasks))
	for i, t := range j.g.Tasks {
		f := t.File
		whole := t.Start == 0 && (t.Length == 0 || t.Length == f.FileSizeBytes())
		clean := len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) == 0
		facts[i] = fileFacts{size: f.FileSizeBytes(), rowGroups: rowGroupSizes(f), eligible: f.FileFormat() == iceberg.ParquetFile && whole && clean}
	}
	keep := rw.sel.copyPlan(j.g.TotalSizeBytes, facts)
	for i, t := range j.g.Tasks {
		groups := facts[i].rowGroups
		switch n := keep[i]; {
		case n == 0:
			rewrite = append(rewrite, t)
		case n == len(groups):
			copies = append(copies, part{path: t.File.FilePath(), bytes: facts[i].size})
		default:
			var kept int64
			for _, size := range groups[:n] {
				kept += size
			}
			copies = append(copies, part{path: t.File.FilePath(), rowGroups: n, bytes: kept})
			// iceberg-go reads the row groups whose offset falls in the
			// task's range: the trailing ones.
			trailing := t
			trailing.Start = t.File.SplitOffsets()[n]
			trailing.Length = t.File.FileSizeBytes() - trailing.Start
			rewrite = append(rewrite, trailing)
		}
	}
	if len(copies) == 0 {
		return j.g.Tasks, nil
	}
	slices.SortStableFunc(copies, func(a, b part) int { return cmp.Compare(b.bytes, a.bytes) })
	return rewrite, copies
}

// join writes the row groups of parts into a new file beside the first
// and describes it for the table: same spec and partition as the group's
// files, statistics read from its footer.
func (rw *rewriter) join(ctx context.Context, j job, parts []part) (iceberg.DataFile, error) {
	wfs, ok := rw.fs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("%w: the table's file IO cannot write", stitch.ErrIncompatible)
	}
	first := parts[0].path
	path := first[:strings.LastIndex(first, "/")+1] + uuid.NewString() + "-joined.parquet"

	srcs := make([]stitch.Source, 0, len(parts))
	for _, p := range parts {
		f, err := rw.fs.Open(p.path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p.path, err)
		}
		defer func() { _ = f.Close() }() // read only: closing loses nothing
		srcs = append(srcs, stitch.Source{Name: p.path, R: f, RowGroups: p.rowGroups})
	}

	w, err := wfs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	_, err = stitch.Files(bw, srcs)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var df iceberg.DataFile
		if df, err = describeJoined(ctx, j.tbl, rw.fs, path, j.g.Tasks[0].File); err == nil {
			return df, nil
		}
	}
	if rerr := wfs.Remove(path); rerr != nil {
		rw.env.log.Debug("cannot delete an unfinished joined file; orphan cleanup will", "file", path, "error", rerr)
	}
	return nil, err
}

// describeJoined is the data file at path, in like's spec and partition:
// its counts and bounds come from its footer (iceberg-go reads them as it
// does for add_files, which cannot itself infer a bucket's value).
func describeJoined(ctx context.Context, tbl *table.Table, fs iceio.IO, path string, like iceberg.DataFile) (iceberg.DataFile, error) {
	stats, err := table.FileToDataFile(ctx, fs, path, tbl.Schema(), *iceberg.UnpartitionedSpec, 0, tbl.Properties())
	if err != nil {
		return nil, fmt.Errorf("%w: read back %s: %w", stitch.ErrIncompatible, path, err)
	}
	spec := tbl.Metadata().PartitionSpecByID(int(like.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("the table has no partition spec %d for %s", like.SpecID(), like.FilePath())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentData, path, iceberg.ParquetFile,
		like.Partition(), partitionLogicalTypes(*spec, tbl.Schema()), nil, stats.Count(), stats.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(stats.ColumnSizes()).ValueCounts(stats.ValueCounts()).NullValueCounts(stats.NullValueCounts()).
		NaNValueCounts(stats.NaNValueCounts()).LowerBoundValues(stats.LowerBoundValues()).UpperBoundValues(stats.UpperBoundValues()).
		SplitOffsets(stats.SplitOffsets())
	return b.Build(), nil
}

// partitionLogicalTypes are the Avro logical types of spec's partition
// values, which manifests write them with (as iceberg-go's writer does).
func partitionLogicalTypes(spec iceberg.PartitionSpec, schema *iceberg.Schema) map[int]string {
	types := map[int]string{}
	for _, f := range spec.Fields() {
		src, ok := schema.FindFieldByID(f.SourceID())
		if !ok {
			continue
		}
		switch f.Transform.ResultType(src.Type).(type) {
		case iceberg.DateType:
			types[f.FieldID] = string(avro.Date)
		case iceberg.TimeType:
			types[f.FieldID] = string(avro.TimeMicros)
		case iceberg.TimestampType, iceberg.TimestampTzType:
			types[f.FieldID] = string(avro.TimestampMicros)
		case iceberg.DecimalType:
			types[f.FieldID] = string(avro.Decimal)
		case iceberg.UUIDType:
			types[f.FieldID] = string(avro.UUID)
		}
	}
	return types
}
