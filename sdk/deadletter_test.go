package sdk

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floehq/floe/sdk/internal/pb"
)

// Across the plugin protocol a dead letter keeps null apart from empty
// (key, value, header values) and its headers' order and repeats; the
// map form still carries them for hosts older than header_list.
func TestDeadLetterCrossesTheProtocolAsItWas(t *testing.T) {
	in := []DeadLetter{
		{Key: []byte{}, Value: nil, HeaderList: []Header{{"t", []byte("a")}, {"t", []byte("b")}, {"n", nil}, {"e", []byte{}}}},
		{Key: nil, Value: []byte{}},
	}
	wire, err := proto.Marshal(&pb.DeadLetterRequest{Records: deadLettersToProto(in)})
	if err != nil {
		t.Fatal(err)
	}
	var out pb.DeadLetterRequest
	if err := proto.Unmarshal(wire, &out); err != nil {
		t.Fatal(err)
	}
	a, b := out.Records[0], out.Records[1]
	if a.Key == nil || len(a.Key) != 0 || a.Value != nil {
		t.Errorf("record 0: key %v value %v, want empty and null", a.Key, a.Value)
	}
	if b.Key != nil || b.Value == nil || len(b.Value) != 0 {
		t.Errorf("record 1: key %v value %v, want null and empty", b.Key, b.Value)
	}
	want := []Header{{"t", []byte("a")}, {"t", []byte("b")}, {"n", nil}, {"e", []byte{}}}
	if len(a.HeaderList) != len(want) {
		t.Fatalf("header_list %v, want %v", a.HeaderList, want)
	}
	for i, h := range a.HeaderList {
		if h.Key != want[i].Key || (h.Value == nil) != (want[i].Value == nil) || string(h.Value) != string(want[i].Value) {
			t.Errorf("header %d = %q %v, want %q %v", i, h.Key, h.Value, want[i].Key, want[i].Value)
		}
	}
	if string(a.Headers["t"]) != "b" || len(a.Headers) != 3 {
		t.Errorf("map form %v, want the last value per name", a.Headers)
	}
}
