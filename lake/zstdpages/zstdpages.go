// Package zstdpages replaces arrow-go's zstd codec for Parquet pages with
// one whose encoders outlive garbage collections and whose window is the
// size of a page. Link it into a binary that writes Parquet:
//
//	import _ "github.com/floehq/floe/lake/zstdpages"
//
// arrow-go keeps its zstd encoders in a sync.Pool, which every garbage
// collection empties, and creates them with zstd's default 8 MiB window,
// for which each encoder allocates a 16 MiB history. Parquet compresses
// each page (1 MiB by Iceberg's default, 256 KiB as floe writes them) on
// its own, so no match ever reaches back further than a page. In a
// plugin that runs under a heap limit the collector runs every ~10 ms:
// every run threw the encoders away and the next pages allocated,
// cleared and faulted in 16 MiB each again, and the histories of the
// live ones took a quarter of the sink's heap.
//
// Only compression changes: the pages are standard zstd frames (any
// reader decodes them, with a window no larger than before), and decoding
// stays arrow-go's.
package zstdpages

import (
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// Window is the encoders' window: Iceberg's default page size. A larger
// page is still compressed whole, with matches at most this far back.
const Window = 1 << 20

// arrowCodec is what arrow-go's zstd codec implements: block coding,
// decoding with errors and streams. The last two stay arrow-go's.
type arrowCodec interface {
	compress.ErrorCodec
	compress.StreamingCodec
}

func init() {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return
	}
	if orig, ok := c.(arrowCodec); ok {
		compress.RegisterCodec(compress.Codecs.Zstd, &codec{arrowCodec: orig})
	}
}

// codec encodes with encoders kept per level for the life of the
// process: as many as pages were compressed at once (one per writer at
// work), at most maxIdle of them, each with a history of twice the
// window and its match tables (about 3 MiB in all).
type codec struct {
	arrowCodec
	mu   sync.Mutex
	idle map[zstd.EncoderLevel][]*zstd.Encoder
}

// Encode compresses src at zstd's default level.
func (c *codec) Encode(dst, src []byte) []byte {
	return c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel compresses src at level (zstd's numbering, as arrow-go's
// codec takes it) into dst's storage when it fits.
func (c *codec) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	enc := c.get(l)
	defer c.put(l, enc)
	return enc.EncodeAll(src, dst[:0])
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
	// The options arrow-go's codec uses, and the page-sized window.
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
		zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(Window))
	if err != nil {
		// Only invalid options fail, and these are constants.
		panic("zstdpages: " + err.Error())
	}
	return enc
}

// maxIdle bounds the encoders kept per level: compressing is pure CPU
// work, so more than twice the processors' count rarely run at once, and
// the ones beyond are left to the collector.
func maxIdle() int { return 2 * runtime.GOMAXPROCS(0) }

func (c *codec) put(l zstd.EncoderLevel, enc *zstd.Encoder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = make(map[zstd.EncoderLevel][]*zstd.Encoder)
	}
	if len(c.idle[l]) < maxIdle() {
		c.idle[l] = append(c.idle[l], enc)
	}
}
