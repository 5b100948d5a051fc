package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// confluentMagic is the first byte of every Confluent-framed message.
const confluentMagic = 0x00

// ConfluentHeaderLen is the size of the Confluent wire-format header: one
// magic byte (0) and a big-endian 4-byte schema id.
const ConfluentHeaderLen = 5

// ErrBadMagic is returned (wrapped) by SplitConfluent when the first byte
// of a message is not the Confluent magic byte 0: the message was not
// produced with a Schema Registry serializer (plain JSON or Avro, or a
// different framing). The error text shows the byte found.
var ErrBadMagic = errors.New("not Confluent wire format: bad magic byte")

// ErrTruncated is returned (wrapped) when data ends too early: by
// SplitConfluent for an empty message or one shorter than the 5-byte header,
// and by Decoder.Append (inside a *DecodeError) when an Avro payload ends
// before the record does.
var ErrTruncated = errors.New("truncated")

// SplitConfluent splits a Confluent-framed message into its schema id and
// Avro payload. The payload aliases msg. A message of exactly the header
// (empty payload) is valid: records with no fields encode to zero bytes.
func SplitConfluent(msg []byte) (schemaID int32, payload []byte, err error) {
	if len(msg) == 0 {
		return 0, nil, fmt.Errorf("confluent wire format: %w: empty message (a tombstone or an unframed value?)", ErrTruncated)
	}
	if msg[0] != confluentMagic {
		return 0, nil, fmt.Errorf("confluent wire format: %w: found 0x%02x, want 0x00 (was the producer using a Schema Registry serializer?)", ErrBadMagic, msg[0])
	}
	if len(msg) < ConfluentHeaderLen {
		return 0, nil, fmt.Errorf("confluent wire format: %w: message is %d bytes, the header alone is %d", ErrTruncated, len(msg), ConfluentHeaderLen)
	}
	return int32(binary.BigEndian.Uint32(msg[1:5])), msg[ConfluentHeaderLen:], nil
}

// AppendConfluent appends the Confluent header for schemaID and then
// payload to dst and returns the extended slice.
func AppendConfluent(dst []byte, schemaID int32, payload []byte) []byte {
	dst = append(dst, confluentMagic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(schemaID))
	return append(dst, payload...)
}
