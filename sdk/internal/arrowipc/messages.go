package arrowipc

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// continuation marks an encapsulated IPC message (format ≥ 0.15).
const continuation = 0xFFFFFFFF

// bytesMessageReader is an ipc.MessageReader over an IPC stream held in
// memory. Unlike ipc.NewMessageReader, which copies each message body
// into a new buffer, it hands out slices of the stream itself.
type bytesMessageReader struct {
	b        []byte
	refCount atomic.Int64
	msg      *ipc.Message
}

func newBytesMessageReader(b []byte) *bytesMessageReader {
	r := &bytesMessageReader{b: b}
	r.refCount.Add(1)
	return r
}

func (r *bytesMessageReader) Retain() { r.refCount.Add(1) }

func (r *bytesMessageReader) Release() {
	if r.refCount.Add(-1) == 0 && r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
}

// Message returns the next message; it is valid until the next call. The
// end of the stream (its end-of-stream marker, or no more bytes) is
// io.EOF; a message cut short is an error.
func (r *bytesMessageReader) Message() (msg *ipc.Message, err error) {
	if r.msg != nil {
		r.msg.Release()
		r.msg = nil
	}
	if len(r.b) == 0 {
		return nil, io.EOF
	}
	if len(r.b) < 4 {
		return nil, fmt.Errorf("arrow/ipc: could not read continuation indicator: %w", io.ErrUnexpectedEOF)
	}
	n := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	switch n {
	case 0:
		return nil, io.EOF
	case continuation:
		if len(r.b) < 4 {
			return nil, fmt.Errorf("arrow/ipc: could not read message length: %w", io.ErrUnexpectedEOF)
		}
		n = binary.LittleEndian.Uint32(r.b)
		r.b = r.b[4:]
		if n == 0 {
			return nil, io.EOF
		}
	}
	metaLen := int64(int32(n))
	if metaLen < 4 {
		return nil, fmt.Errorf("arrow/ipc: invalid message metadata length %d", metaLen)
	}
	if metaLen > int64(len(r.b)) {
		return nil, fmt.Errorf("arrow/ipc: could not read message metadata: %w", io.ErrUnexpectedEOF)
	}
	meta := memory.NewBufferBytes(r.b[:metaLen])
	r.b = r.b[metaLen:]
	defer func() {
		// A malformed flatbuffer panics; report it as the stream reader does.
		if p := recover(); p != nil {
			msg, err = nil, fmt.Errorf("arrow/ipc: invalid message metadata: %v", p)
		}
	}()
	// The body length is in the metadata: read it from a message with an
	// empty body, then make the real one.
	probe := ipc.NewMessage(meta, memory.NewBufferBytes(nil))
	bodyLen := probe.BodyLen()
	probe.Release()
	if bodyLen < 0 || bodyLen > int64(len(r.b)) {
		return nil, fmt.Errorf("arrow/ipc: could not read message body (%d bytes): %w", bodyLen, io.ErrUnexpectedEOF)
	}
	body := memory.NewBufferBytes(r.b[:bodyLen])
	r.b = r.b[bodyLen:]
	r.msg = ipc.NewMessage(meta, body)
	return r.msg, nil
}
