// Package stitch joins Parquet files of one schema into one file by copying
// their row groups byte for byte and writing a footer that lists them all,
// as parquet-mr's appendRowGroups does: nothing is decoded or compressed
// again, so joining costs about what copying the bytes does.
package stitch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// ErrIncompatible is returned, wrapped with the file and the reason, for
// inputs that cannot be joined without decoding them: another schema,
// encryption, page indexes or bloom filters (their offsets point into the
// file they were written in).
var ErrIncompatible = errors.New("cannot join the files' row groups as they are")

// Source is one input file.
type Source struct {
	Name string // for errors
	R    parquet.ReaderAtSeeker
	// RowGroups, when above 0, copies only the file's first RowGroups row
	// groups (the caller rewrites the others); 0 copies them all.
	RowGroups int
}

// Result is what a join wrote.
type Result struct {
	Rows, Bytes int64
	RowGroups   int
}

var magic = []byte("PAR1")

// Files writes the row groups of srcs, in order, to w as one Parquet file
// with the first source's schema and key-value metadata. All footers are
// read and checked before anything is written.
func Files(w io.Writer, srcs []Source) (Result, error) {
	if len(srcs) == 0 {
		return Result{}, errors.New("stitch: no files to join")
	}
	mds := make([]*metadata.FileMetaData, len(srcs))
	for i, s := range srcs {
		rdr, err := file.NewParquetReader(s.R)
		if err != nil {
			return Result{}, fmt.Errorf("stitch: read the footer of %s: %w", s.Name, err)
		}
		mds[i] = rdr.MetaData()
		if err := joinable(mds[0], mds[i]); err != nil {
			return Result{}, fmt.Errorf("stitch: %s: %w: %w", s.Name, ErrIncompatible, err)
		}
	}

	cw := &countingWriter{w: w}
	if _, err := cw.Write(magic); err != nil {
		return Result{}, err
	}
	out := mds[0]
	// The row groups' type is arrow-go's generated Thrift code, which is
	// internal: it can be used but not named, hence the loop inline.
	groups := out.RowGroups[:0:0]
	var rows int64
	for i, md := range mds {
		if n := srcs[i].RowGroups; n > len(md.RowGroups) {
			return Result{}, fmt.Errorf("stitch: %s has %d row groups, not the %d to copy", srcs[i].Name, len(md.RowGroups), n)
		}
		copied := md.RowGroups
		if n := srcs[i].RowGroups; n > 0 {
			copied = copied[:n]
		}
		for _, rg := range copied {
			var compressed int64
			for j, c := range rg.Columns {
				m := c.MetaData
				at := cw.n
				shift, err := copyChunk(cw, srcs[i].R, m.DataPageOffset, m.DictionaryPageOffset, m.IndexPageOffset, m.TotalCompressedSize)
				if err != nil {
					return Result{}, fmt.Errorf("stitch: copy column %d of a row group of %s: %w", j, srcs[i].Name, err)
				}
				m.DataPageOffset += shift
				moveOffset(m.DictionaryPageOffset, shift)
				moveOffset(m.IndexPageOffset, shift)
				if c.FileOffset != 0 {
					c.FileOffset += shift
				}
				if j == 0 {
					rg.FileOffset = &at
				}
				compressed += m.TotalCompressedSize
			}
			rg.TotalCompressedSize = &compressed
			ordinal := int16(len(groups))
			rg.Ordinal = &ordinal
			groups = append(groups, rg)
			rows += rg.NumRows
		}
	}
	out.RowGroups = groups
	out.NumRows = rows

	start := cw.n
	if _, err := out.WriteTo(cw, nil); err != nil {
		return Result{}, fmt.Errorf("stitch: write the footer: %w", err)
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(cw.n-start))
	copy(tail[4:], magic)
	if _, err := cw.Write(tail[:]); err != nil {
		return Result{}, err
	}
	return Result{Rows: rows, Bytes: cw.n, RowGroups: len(groups)}, nil
}

// joinable says why md's row groups cannot follow first's in one file.
func joinable(first, md *metadata.FileMetaData) error {
	if md.FileDecryptor != nil || md.FileMetaData.EncryptionAlgorithm != nil {
		return errors.New("it is encrypted")
	}
	if !reflect.DeepEqual(first.FileMetaData.Schema, md.FileMetaData.Schema) {
		return errors.New("its schema differs from the first file's")
	}
	for _, rg := range md.RowGroups {
		for _, c := range rg.Columns {
			switch {
			case c.FilePath != nil:
				return errors.New("a column chunk lives in another file")
			case c.CryptoMetadata != nil || c.EncryptedColumnMetadata != nil:
				return errors.New("a column chunk is encrypted")
			case c.MetaData == nil:
				return errors.New("a column chunk has no metadata")
			case c.OffsetIndexOffset != nil || c.ColumnIndexOffset != nil:
				return errors.New("it has page indexes")
			case c.MetaData.BloomFilterOffset != nil:
				return errors.New("it has bloom filters")
			}
		}
	}
	return nil
}

// copyChunk copies a column chunk (its pages start at the data page, or
// at the dictionary or index page before it, and take size bytes) from r
// to the end of w, and returns how far its offsets moved.
func copyChunk(w *countingWriter, r io.ReaderAt, data int64, dict, index *int64, size int64) (int64, error) {
	from := data
	for _, p := range []*int64{dict, index} {
		if p != nil && *p > 0 && *p < from {
			from = *p
		}
	}
	to := w.n
	if _, err := io.Copy(w, io.NewSectionReader(r, from, size)); err != nil {
		return 0, err
	}
	if w.n-to != size {
		return 0, fmt.Errorf("the chunk ends before its %d bytes", size)
	}
	return to - from, nil
}

func moveOffset(p *int64, shift int64) {
	if p != nil && *p > 0 {
		*p += shift
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
