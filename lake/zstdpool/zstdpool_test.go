package zstdpool

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

func TestRoundTripAndKeptEncoders(t *testing.T) {
	got, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := got.(*codec)
	if !ok {
		t.Fatalf("the registered zstd codec is %T, not this package's", got)
	}
	page := bytes.Repeat([]byte("floe writes parquet pages; "), 40_000) // ~1 MiB
	first := c.EncodeLevel(nil, page, compress.DefaultCompressionLevel)
	kept := c.idle
	if n := len(kept[levelOf(compress.DefaultCompressionLevel)]); n != 1 {
		t.Fatalf("%d encoders idle after one page, want 1", n)
	}
	enc := kept[levelOf(compress.DefaultCompressionLevel)][0]
	runtime.GC()
	runtime.GC()
	second := c.EncodeLevel(nil, page, compress.DefaultCompressionLevel)
	if again := c.idle[levelOf(compress.DefaultCompressionLevel)]; len(again) != 1 || again[0] != enc {
		t.Errorf("the encoder was not kept across garbage collections")
	}
	if !bytes.Equal(first, second) {
		t.Errorf("the same page compressed differently with a kept encoder")
	}
	for _, frame := range [][]byte{first, second} {
		back, err := compress.Decode(c, nil, frame)
		if err != nil || !bytes.Equal(back, page) {
			t.Fatalf("decode: %v (equal %v)", err, bytes.Equal(back, page))
		}
	}
	if len(first) >= len(page)/10 {
		t.Errorf("a repetitive page compressed to %d of %d bytes", len(first), len(page))
	}
}
