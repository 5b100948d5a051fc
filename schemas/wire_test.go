package schemas

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestSplitConfluent(t *testing.T) {
	tests := []struct {
		name    string
		msg     []byte
		id      int32
		payload []byte
		err     error
		errText string
	}{
		{"ok", []byte{0, 0, 0, 1, 0x2c, 0xaa, 0xbb}, 300, []byte{0xaa, 0xbb}, nil, ""},
		{"empty payload", []byte{0, 0, 0, 0, 7}, 7, []byte{}, nil, ""},
		{"negative id", []byte{0, 0xff, 0xff, 0xff, 0xff, 1}, -1, []byte{1}, nil, ""},
		{"empty", nil, 0, nil, ErrTruncated, "empty message"},
		{"bad magic", []byte{'{', '"', 'a', '"', ':', '1', '}'}, 0, nil, ErrBadMagic, "found 0x7b"},
		{"bad magic short", []byte{0x01}, 0, nil, ErrBadMagic, "found 0x01"},
		{"too short", []byte{0, 0, 1}, 0, nil, ErrTruncated, "3 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, payload, err := SplitConfluent(tt.msg)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("error %q does not contain %q", err, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id != tt.id || !bytes.Equal(payload, tt.payload) {
				t.Errorf("got (%d, %x), want (%d, %x)", id, payload, tt.id, tt.payload)
			}
		})
	}
}

func TestAppendConfluentRoundTrip(t *testing.T) {
	for _, id := range []int32{0, 1, 300, math.MaxInt32, -5} {
		prefix := []byte("keep")
		msg := AppendConfluent(prefix, id, []byte("payload"))
		if !bytes.HasPrefix(msg, []byte("keep")) {
			t.Fatalf("dst prefix lost: %q", msg)
		}
		gotID, payload, err := SplitConfluent(msg[4:])
		if err != nil || gotID != id || string(payload) != "payload" {
			t.Errorf("id %d: got (%d, %q, %v)", id, gotID, payload, err)
		}
	}
	if got := AppendConfluent(nil, 1, nil); !bytes.Equal(got, []byte{0, 0, 0, 0, 1}) {
		t.Errorf("header = %x", got)
	}
}
