package maintenance

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// TableChange is what the monitor saw of one table: what changed since the
// previous cycle and the table's current shape. It reads only metadata:
// the metadata.json, snapshot summaries, the manifest list and the
// manifests (each manifest once: manifests never change, so their counts
// are cached by path).
type TableChange struct {
	Table string
	// Tbl is the table as loaded; tasks plan on it.
	Tbl *table.Table

	// Since the previous cycle (the first cycle counts all snapshots).
	NewSnapshots   int64
	NewCommits     int64 // snapshots other than maintenance's and other rewrites
	AddedDataFiles int64
	AddedBytes     int64

	// Current shape.
	Snapshots     int64
	Manifests     int64
	DataFiles     int64
	DataBytes     int64
	Records       int64
	SmallFiles    int64
	SmallBytes    int64
	DeleteFiles   int64
	MetadataBytes int64
	LastCommit    time.Time
	// Partitions holds per-partition data-file counts; MaxPartition is the
	// fullest partition ("" for an unpartitioned table).
	Partitions        map[string]partitionStats
	MaxPartition      string
	MaxPartitionFiles int64
	// MaxPartitionSmallFiles is the most small files of any partition.
	MaxPartitionSmallFiles int64
	// SmallLimit is the size under which a data file counted as small.
	SmallLimit int64
	// Idle holds the partitions with at least min-input-files small
	// files whose newest data file was added longer than idle-partition.ms
	// ago (none when that is 0): rewrite-data-files compacts them fully.
	Idle map[string]bool
}

// Health is the change as sdk.TableHealth.
func (c TableChange) Health() sdk.TableHealth {
	return sdk.TableHealth{
		Table: c.Table, Snapshots: c.Snapshots, DataFiles: c.DataFiles, SmallFiles: c.SmallFiles,
		DeleteFiles: c.DeleteFiles, DataBytes: c.DataBytes, Records: c.Records, Manifests: c.Manifests,
		MetadataBytes: c.MetadataBytes, LastCommit: c.LastCommit,
		MaxPartition: c.MaxPartition, MaxPartitionFiles: c.MaxPartitionFiles,
	}
}

// partitionStats counts one partition's live data files.
type partitionStats struct {
	Files, Bytes, SmallFiles, SmallBytes, Records int64
	// Newest is when the newest file was added (Unix ms of the snapshot
	// that added it; 0 when that snapshot was expired: older than the
	// table's snapshot window).
	Newest int64
}

// manifestStats is what one manifest holds, by partition.
type manifestStats struct {
	parts       map[string]partitionStats
	deleteFiles int64
}

// tableCache is the monitor's memory of one table.
type tableCache struct {
	smallLimit int64
	// labels is what the cached partition labels were printed against
	// (the default spec and current schema): see lake.PartitionLabel.
	labels    [2]int
	manifests map[string]*manifestStats
	// seq is the sequence number of the head at the previous cycle.
	seq int64
}

// monitor observes tables. Cycle and Status may use it at once.
type monitor struct {
	mu     sync.Mutex
	tables map[string]*tableCache
}

func newMonitor() *monitor { return &monitor{tables: map[string]*tableCache{}} }

// observe loads table name and measures it. advance moves the "since the
// previous cycle" cursor (a cycle does; Status does not).
func (m *monitor) observe(ctx context.Context, cat catalog.Catalog, s settings, name string, advance bool) (TableChange, error) {
	id, err := parseTableName(name)
	if err != nil {
		return TableChange{}, err
	}
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		return TableChange{}, fmt.Errorf("load table %s: %w", name, err)
	}
	return m.measure(ctx, s, name, tbl, advance)
}

// measure measures a loaded table.
func (m *monitor) measure(ctx context.Context, s settings, name string, tbl *table.Table, advance bool) (TableChange, error) {
	meta := tbl.Metadata()
	ch := TableChange{Table: name, Tbl: tbl, Partitions: map[string]partitionStats{}}
	ch.SmallLimit = smallFileLimit(s.targetSize(meta.Properties()))

	m.mu.Lock()
	tc := m.tables[name]
	labels := [2]int{meta.DefaultPartitionSpec(), meta.CurrentSchema().ID}
	if tc == nil || tc.smallLimit != ch.SmallLimit || tc.labels != labels {
		tc = &tableCache{smallLimit: ch.SmallLimit, labels: labels, manifests: map[string]*manifestStats{}, seq: -1}
		if old := m.tables[name]; old != nil {
			tc.seq = old.seq
		}
		m.tables[name] = tc
	}
	cursor := tc.seq
	m.mu.Unlock()

	snaps := meta.Snapshots()
	ch.Snapshots = int64(len(snaps))
	var headSeq int64
	for _, sn := range snaps {
		headSeq = max(headSeq, sn.SequenceNumber)
		if sn.SequenceNumber <= cursor {
			continue
		}
		ch.NewSnapshots++
		if isMaintenanceSnapshot(&sn) {
			continue
		}
		ch.NewCommits++
		if sn.Summary != nil {
			ch.AddedDataFiles += summaryInt(sn.Summary.Properties, "added-data-files")
			ch.AddedBytes += summaryInt(sn.Summary.Properties, "added-files-size")
		}
	}

	fs, err := tbl.FS(ctx)
	if err != nil {
		return ch, fmt.Errorf("table %s: open file IO: %w", name, err)
	}
	if size, err := fileSize(fs, tbl.MetadataLocation()); err == nil {
		ch.MetadataBytes = size
	}
	head := meta.CurrentSnapshot()
	if head != nil {
		ch.LastCommit = time.UnixMilli(head.TimestampMs).UTC()
		manifests, err := head.Manifests(fs)
		if err != nil {
			return ch, fmt.Errorf("table %s: read manifest list of snapshot %d: %w", name, head.SnapshotID, err)
		}
		ch.Manifests = int64(len(manifests))
		live := make(map[string]*manifestStats, len(manifests))
		for _, mf := range manifests {
			m.mu.Lock()
			st := tc.manifests[mf.FilePath()]
			m.mu.Unlock()
			if st == nil {
				if st, err = readManifestStats(fs, mf, meta, ch.SmallLimit); err != nil {
					return ch, fmt.Errorf("table %s: %w", name, err)
				}
			}
			live[mf.FilePath()] = st
			ch.DeleteFiles += st.deleteFiles
			for k, p := range st.parts {
				q := ch.Partitions[k]
				q.Files += p.Files
				q.Bytes += p.Bytes
				q.SmallFiles += p.SmallFiles
				q.SmallBytes += p.SmallBytes
				q.Records += p.Records
				q.Newest = max(q.Newest, p.Newest)
				ch.Partitions[k] = q
			}
		}
		m.mu.Lock()
		tc.manifests = live // forget manifests the head no longer lists
		m.mu.Unlock()
	}
	keys := make([]string, 0, len(ch.Partitions))
	for k := range ch.Partitions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := ch.Partitions[k]
		ch.DataFiles += p.Files
		ch.DataBytes += p.Bytes
		ch.SmallFiles += p.SmallFiles
		ch.SmallBytes += p.SmallBytes
		ch.Records += p.Records
		if p.Files > ch.MaxPartitionFiles {
			ch.MaxPartition, ch.MaxPartitionFiles = k, p.Files
		}
		ch.MaxPartitionSmallFiles = max(ch.MaxPartitionSmallFiles, p.SmallFiles)
		if s.idleAfter > 0 && p.SmallFiles >= int64(max(s.minInputFiles, 2)) && time.Since(time.UnixMilli(p.Newest)) > s.idleAfter {
			if ch.Idle == nil {
				ch.Idle = map[string]bool{}
			}
			ch.Idle[k] = true
		}
	}
	if advance {
		m.mu.Lock()
		tc.seq = headSeq
		m.mu.Unlock()
	}
	return ch, nil
}

// readManifestStats counts the live entries of one manifest.
func readManifestStats(fs iceio.IO, mf iceberg.ManifestFile, meta table.Metadata, smallLimit int64) (*manifestStats, error) {
	st := &manifestStats{parts: map[string]partitionStats{}}
	for e, err := range mf.Entries(fs, true) {
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
		}
		df := e.DataFile()
		if df.ContentType() != iceberg.EntryContentData {
			st.deleteFiles++
			continue
		}
		k := lake.PartitionLabel(meta, df)
		p := st.parts[k]
		if sn := meta.SnapshotByID(e.SnapshotID()); sn != nil {
			// A snapshot's time never changes, so the manifest's stats
			// stay right when it is cached.
			p.Newest = max(p.Newest, sn.TimestampMs)
		}
		p.Files++
		p.Bytes += df.FileSizeBytes()
		p.Records += df.Count()
		if df.FileSizeBytes() < smallLimit {
			p.SmallFiles++
			p.SmallBytes += df.FileSizeBytes()
		}
		st.parts[k] = p
	}
	return st, nil
}

// isMaintenanceSnapshot reports a snapshot that rewrote files rather than
// committing new rows: maintenance's own, or another engine's rewrite.
func isMaintenanceSnapshot(s *table.Snapshot) bool {
	if s.Summary == nil {
		return false
	}
	if _, ok := s.Summary.Properties[summaryMaintenance]; ok {
		return true
	}
	return s.Summary.Operation == table.OpReplace
}

func summaryInt(props iceberg.Properties, key string) int64 {
	n, _ := strconv.ParseInt(props[key], 10, 64)
	return n
}

// fileSize stats one file through the table's IO.
func fileSize(fs iceio.IO, path string) (int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only: closing loses nothing
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}
