// Package zstdpool replaces arrow-go's Parquet zstd codec with one whose
// encoders outlive garbage collections. arrow-go keeps its encoders in a
// sync.Pool, which every other collection empties; a new encoder then
// allocates and clears its match tables and a window-sized history
// before its first page. A writer that closes a file every second (1 s
// checkpoints) compresses a page per column once a second, between
// collections, so it paid for new encoders again and again (the paced
// profile in bench-results/2026-12-06.md: runtime.memclrNoHeapPointers
// under zstd's addBlock). Import it for its side effect.
//
// The frames are standard zstd; the window is 1 MiB, the size of a
// Parquet data page, so a page compresses as with arrow-go's 8 MiB.
package zstdpool

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// window is the encoders' window: a Parquet data page (1 MiB by default)
// fits in it whole.
const window = 1 << 20

// keep is how many idle encoders a level keeps. Each writer compresses
// its pages one at a time, so a process needs about one per open file
// being written; the rest are dropped.
const keep = 4

func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic("zstdpool: arrow-go has no zstd codec to wrap: " + err.Error())
	}
	errs, ok1 := base.(compress.ErrorCodec)
	streams, ok2 := base.(compress.StreamingCodec)
	if !ok1 || !ok2 {
		panic("zstdpool: arrow-go's zstd codec no longer decodes with errors or streams")
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &codec{ErrorCodec: errs, StreamingCodec: streams, idle: map[zstd.EncoderLevel][]*zstd.Encoder{}})
}

// codec is arrow-go's zstd codec with Encode and EncodeLevel drawing on
// kept encoders; decoding and streams are arrow-go's.
type codec struct {
	compress.ErrorCodec
	compress.StreamingCodec
	mu   sync.Mutex
	idle map[zstd.EncoderLevel][]*zstd.Encoder
}

func (c *codec) Encode(dst, src []byte) []byte {
	return c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (c *codec) EncodeLevel(dst, src []byte, level int) []byte {
	l := levelOf(level)
	enc := c.get(l)
	defer c.put(l, enc)
	return enc.EncodeAll(src, dst[:0])
}

// levelOf maps a Parquet compression level to zstd's, as arrow-go does.
func levelOf(level int) zstd.EncoderLevel {
	if level == compress.DefaultCompressionLevel {
		return zstd.SpeedDefault
	}
	return zstd.EncoderLevelFromZstd(level)
}

func (c *codec) get(l zstd.EncoderLevel) *zstd.Encoder {
	c.mu.Lock()
	if n := len(c.idle[l]); n > 0 {
		enc := c.idle[l][n-1]
		c.idle[l] = c.idle[l][:n-1]
		c.mu.Unlock()
		return enc
	}
	c.mu.Unlock()
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1),
		zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(window))
	if err != nil {
		panic("zstdpool: " + err.Error()) // the options are constants
	}
	return enc
}

func (c *codec) put(l zstd.EncoderLevel, enc *zstd.Encoder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.idle[l]) < keep {
		c.idle[l] = append(c.idle[l], enc)
	}
}
