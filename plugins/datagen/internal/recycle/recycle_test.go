package recycle

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func aligned(b []byte) bool {
	return cap(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%alignment == 0
}

func TestReuseZeroedAndAligned(t *testing.T) {
	a := New(1 << 20)
	b := a.Allocate(5000)
	if len(b) != 5000 || cap(b) != 8192 || !aligned(b) {
		t.Fatalf("len %d cap %d aligned %v", len(b), cap(b), aligned(b))
	}
	for i := range b {
		b[i] = 0xff
	}
	a.Free(b)
	if a.Kept() != 8192 {
		t.Fatalf("kept %d after a free", a.Kept())
	}
	c := a.Allocate(6000)
	if unsafe.SliceData(c) != unsafe.SliceData(b) {
		t.Fatal("a buffer of the same class was not reused")
	}
	for i, x := range c {
		if x != 0 {
			t.Fatalf("reused byte %d is %#x, not zero", i, x)
		}
	}
	for i := range c {
		c[i] = 0xff
	}
	// Growing within the class keeps the contents and zeroes the rest.
	d := a.Reallocate(8000, c)
	if unsafe.SliceData(d) != unsafe.SliceData(c) || d[5999] != 0xff || d[6000] != 0 || d[7999] != 0 {
		t.Fatal("Reallocate within the class")
	}
	// Growing past it copies into a bigger class and frees the old one.
	e := a.Reallocate(10000, d)
	if cap(e) != 16384 || e[7999] != 0 || e[5999] != 0xff || e[9999] != 0 || a.Kept() != 8192 {
		t.Fatalf("Reallocate past the class: cap %d kept %d", cap(e), a.Kept())
	}
	// Small buffers are Go's.
	if s := a.Allocate(100); len(s) != 100 || !aligned(s) {
		t.Fatal("small Allocate")
	} else {
		a.Free(s)
	}
	if a.Kept() != 8192 {
		t.Fatalf("a small buffer was kept: %d", a.Kept())
	}
}

func TestLimit(t *testing.T) {
	a := New(10000)
	x, y := a.Allocate(8192), a.Allocate(8192)
	a.Free(x)
	a.Free(y)
	if a.Kept() != 8192 {
		t.Fatalf("kept %d with a limit of 10000", a.Kept())
	}
	a.Free(make([]byte, 5000, 6000)) // not one of ours
	if a.Kept() != 8192 {
		t.Fatalf("kept a foreign buffer: %d", a.Kept())
	}
}

// Record batches built, released and built again hold the same values as
// with Go's allocator; releases may come from other goroutines.
func TestWithBuilders(t *testing.T) {
	a := New(64 << 20)
	mem := memory.NewCheckedAllocator(a)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	build := func(b *array.RecordBuilder, round int) arrow.RecordBatch {
		for i := range 3000 {
			if (i+round)%7 == 0 {
				b.Field(0).AppendNull()
				b.Field(1).AppendNull()
				continue
			}
			b.Field(0).(*array.StringBuilder).Append("value")
			lb := b.Field(1).(*array.ListBuilder)
			lb.Append(true)
			for j := range (i + round) % 4 {
				lb.ValueBuilder().(*array.Int64Builder).Append(int64(j))
			}
		}
		return b.NewRecordBatch()
	}
	b := array.NewRecordBuilder(mem, schema)
	ref := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	var wg sync.WaitGroup
	for round := range 20 {
		rec, want := build(b, round), build(ref, round)
		if !array.RecordEqual(rec, want) {
			t.Fatalf("round %d: the recycled batch differs", round)
		}
		want.Release()
		wg.Add(1)
		go func() { defer wg.Done(); rec.Release() }()
		if round%5 == 4 {
			wg.Wait()
		}
	}
	wg.Wait()
	b.Release()
	ref.Release()
	mem.AssertSize(t, 0)
	if a.Kept() == 0 {
		t.Error("nothing was kept for reuse")
	}
}
