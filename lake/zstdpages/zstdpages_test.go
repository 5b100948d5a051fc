package zstdpages

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// page is n bytes that compress like a Parquet page of short strings:
// words from a small vocabulary with random numbers between them.
func page(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"checkout", "login", "search", "view", "cart", "eu-west", "us-east"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(byte('0' + r.IntN(10)))
		b.WriteByte(byte(r.IntN(256)))
	}
	return b.Bytes()[:n]
}

func TestPagesRoundTripThroughArrowsCodec(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*codec); !ok {
		t.Fatalf("the zstd codec is %T, not this package's", c)
	}
	for _, n := range []int{100, 64 << 10, Window, Window + Window/2} {
		src := page(n)
		for _, level := range []int{compress.DefaultCompressionLevel, 1, 9} {
			enc := c.EncodeLevel(nil, src, level)
			got, err := compress.Decode(c, nil, enc)
			if err != nil {
				t.Fatalf("%d bytes, level %d: decode: %v", n, level, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("%d bytes, level %d: round trip changed the page", n, level)
			}
			// A reader needs no window larger than Window.
			dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(Window))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dec.DecodeAll(enc, nil); err != nil {
				t.Fatalf("%d bytes, level %d: decode with a %d-byte window: %v", n, level, Window, err)
			}
			dec.Close()
		}
	}
}

// TestEncodersOutliveCollections: arrow-go's pooled encoders are gone
// after a collection, and the next page allocates a fresh 16 MiB history.
func TestEncodersOutliveCollections(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	src := page(Window)
	dst := make([]byte, 0, c.CompressBound(int64(len(src))))
	c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
		t.Fatalf("a page after two collections allocated %d bytes; want the encoder kept (< 256 KiB)", n)
	}
}

// TestIdleEncodersAreBounded: a burst of concurrent pages leaves at most
// maxIdle encoders behind, not one per page of the burst.
func TestIdleEncodersAreBounded(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	z := c.(*codec)
	const level = 3
	l := zstd.EncoderLevelFromZstd(level)
	burst := make([]*zstd.Encoder, 4*maxIdle())
	for i := range burst {
		burst[i] = z.get(l)
	}
	for _, enc := range burst {
		z.put(l, enc)
	}
	z.mu.Lock()
	n := len(z.idle[l])
	z.mu.Unlock()
	if n != maxIdle() {
		t.Fatalf("%d idle encoders after a burst of %d; want %d", n, len(burst), maxIdle())
	}
	src := page(64 << 10)
	got, err := compress.Decode(c, nil, c.EncodeLevel(nil, src, level))
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("round trip after the burst: %v", err)
	}
}
