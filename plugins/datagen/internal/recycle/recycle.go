// Package recycle is an Arrow memory allocator that keeps the buffers of
// released record batches and hands them out again.
//
// A datagen task builds every batch into fresh Arrow buffers, and the
// plugin protocol releases the batch as soon as it has been encoded for
// the host. With Go's allocator each batch is then garbage: megabytes per
// batch for the collector to find, and fresh memory to zero. Recycling the
// buffers takes that cost (about a sixth of generating into Arrow) away.
//
// Buffers come in power-of-two size classes from 4 KiB up, 64-byte
// aligned, zeroed as Go's allocator would give them. Smaller ones come from
// Go's allocator and are left to the collector. An Allocator keeps at most
// its limit of free bytes; past that, freed buffers go to the collector.
package recycle

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	minClass  = 12 // 4 KiB
	maxClass  = 40
	alignment = 64
)

// Allocator implements Arrow's memory.Allocator. It is safe for concurrent
// use: batches may be released on any goroutine.
type Allocator struct {
	mu    sync.Mutex
	free  [maxClass + 1][][]byte
	kept  int
	limit int
	small memory.GoAllocator
}

// New returns an Allocator that keeps at most limit bytes of free buffers.
func New(limit int) *Allocator { return &Allocator{limit: limit} }

// class returns the size class of a buffer of size bytes, or -1 for sizes
// left to Go's allocator.
func class(size int) int {
	if size <= 1<<(minClass-1) {
		return -1
	}
	c := bits.Len(uint(size - 1))
	if c > maxClass {
		return -1
	}
	return c
}

// Allocate returns size zeroed bytes, 64-byte aligned.
func (a *Allocator) Allocate(size int) []byte {
	c := class(size)
	if c < 0 {
		return a.small.Allocate(size)
	}
	a.mu.Lock()
	if n := len(a.free[c]); n > 0 {
		b := a.free[c][n-1]
		a.free[c][n-1] = nil
		a.free[c] = a.free[c][:n-1]
		a.kept -= cap(b)
		a.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	a.mu.Unlock()
	buf := make([]byte, 1<<c+alignment)
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & (alignment - 1))
	return buf[shift : shift+size : shift+1<<c]
}

// Reallocate resizes b to size bytes, keeping its contents; bytes past
// the old length are zero.
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) && class(cap(b)) >= 0 {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free takes back a buffer that Allocate or Reallocate returned.
func (a *Allocator) Free(b []byte) {
	c := class(cap(b))
	if c < 0 || cap(b) != 1<<c {
		return // a small buffer, or none of ours: the collector's
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.kept+cap(b) > a.limit {
		return
	}
	a.free[c] = append(a.free[c], b[:0])
	a.kept += cap(b)
}

// Kept returns the bytes of free buffers the Allocator holds.
func (a *Allocator) Kept() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.kept
}

var _ memory.Allocator = (*Allocator)(nil)
