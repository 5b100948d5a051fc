package kafkastore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// These tests need no broker.

func TestParseSettings(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{
			"bootstrap.servers": "k:9092", "group.id": "floe", "config.storage.topic": "c",
			"offset.storage.topic": "o", "status.storage.topic": "s",
		}
	}
	s, err := ParseSettings(base())
	if err != nil {
		t.Fatal(err)
	}
	if s.GroupID != "floe" || s.Client.Bootstrap() != "k:9092" ||
		s.ConfigTopic.Name != "c" || !s.ConfigTopic.SinglePartition || s.ConfigTopic.ReplicationFactor != 3 || s.ConfigTopic.Key != KeyConfigTopic ||
		s.OffsetTopic.Partitions != 25 || s.OffsetTopic.ReplicationFactor != 3 ||
		s.StatusTopic.Partitions != 5 || s.StatusTopic.Key != KeyStatusTopic {
		t.Fatalf("defaults: %+v", s)
	}
	raw := base()
	raw[KeyOffsetPartitions], raw[KeyStatusReplicationFactor], raw[KeyConfigReplicationFactor] = "50", "-1", "1"
	if s, err = ParseSettings(raw); err != nil || s.OffsetTopic.Partitions != 50 || s.StatusTopic.ReplicationFactor != -1 || s.ConfigTopic.ReplicationFactor != 1 {
		t.Fatalf("set: %+v %v", s, err)
	}
	for key, bad := range map[string]string{
		"group.id": "", "config.storage.topic": "", "status.storage.topic": "", "offset.storage.topic": "",
		KeyOffsetPartitions: "0", KeyStatusPartitions: "many", KeyOffsetReplicationFactor: "-2",
	} {
		raw := base()
		raw[key] = bad
		_, err := ParseSettings(raw)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: got %v, want an error naming the key", key, bad, err)
		}
	}
	raw = base()
	raw["status.storage.topic"] = "c"
	if _, err := ParseSettings(raw); err == nil || !strings.Contains(err.Error(), "config.storage.topic and status.storage.topic") {
		t.Errorf("shared topic: %v", err)
	}
}

func TestAdmitConfig(t *testing.T) {
	state := map[string]Record{}
	get := func(k string) (Record, bool) { r, ok := state[k]; return r, ok }
	if !admitConfig(Record{Key: "connector-a", Epoch: 0}, get) {
		t.Fatal("a record before any leader was rejected")
	}
	state[KeyLeader] = Record{Key: KeyLeader, Epoch: 3}
	for epoch, want := range map[int64]bool{2: false, 3: true, 4: true} {
		if got := admitConfig(Record{Key: "connector-a", Epoch: epoch}, get); got != want {
			t.Errorf("epoch %d under leader 3: admitted %v", epoch, got)
		}
		if got := admitConfig(Record{Key: KeyLeader, Epoch: epoch}, get); got != want {
			t.Errorf("leader record epoch %d under leader 3: admitted %v", epoch, got)
		}
	}
}

func TestAdmitStatus(t *testing.T) {
	data := func(worker string, gen int64) json.RawMessage {
		b, _ := json.Marshal(TaskStatus{WorkerID: worker, Generation: gen, State: "RUNNING"})
		return b
	}
	key := taskKey("orders", 1)
	state := map[string]Record{key: {Key: key, Data: data("w1", 5)}}
	get := func(k string) (Record, bool) { r, ok := state[k]; return r, ok }
	for _, c := range []struct {
		key    string
		data   json.RawMessage
		admits bool
	}{
		{key, data("w2", 4), false},
		{key, data("w2", 5), true},
		{key, data("w2", 6), true},
		{key, data("w1", 1), true},
		{key, nil, true},
		{taskKey("orders", 2), data("w2", 0), true},
		{PrefixConnectorStatus + "orders", data("w2", 0), true},
		{PrefixWorker + "w2", data("w2", 0), true},
	} {
		if got := admitStatus(Record{Key: c.key, Data: c.data}, get); got != c.admits {
			t.Errorf("%s %s: admitted %v", c.key, c.data, got)
		}
	}
}

func TestDecode(t *testing.T) {
	tb := &Table{cfg: TableConfig{Topic: "cfg", TopicKey: KeyConfigTopic, GroupID: "mine"}}
	topic := "cfg"
	msg := func(key, value []byte, headers ...kafka.Header) *kafka.Message {
		return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0, Offset: 9}, Key: key, Value: value, Headers: headers}
	}
	env := func(group string, format int) []byte {
		b, _ := json.Marshal(envelope{Format: format, GroupID: group, Epoch: 4, Data: json.RawMessage(`{"x":1}`)})
		return b
	}
	r, err := tb.decode(msg([]byte("k"), env("mine", 1)))
	if err != nil || r.Epoch != 4 || string(r.Data) != `{"x":1}` || r.Offset != 9 || r.Deleted() {
		t.Fatalf("own record: %+v %v", r, err)
	}
	r, err = tb.decode(msg([]byte("k"), nil, kafka.Header{Key: headerGroupID, Value: []byte("mine")}, kafka.Header{Key: headerEpoch, Value: []byte("7")}))
	if err != nil || !r.Deleted() || r.Epoch != 7 {
		t.Fatalf("own tombstone: %+v %v", r, err)
	}
	if r, err := tb.decode(msg([]byte("k"), nil)); err != nil || !r.Deleted() {
		t.Fatalf("a tombstone from a tool: %+v %v", r, err)
	}
	for name, c := range map[string]struct {
		m    *kafka.Message
		want []string
	}{
		"other cluster":           {msg([]byte("k"), env("theirs", 1)), []string{`group.id "theirs"`, `"mine"`, `topic "cfg"`, "offset 9", `key "k"`}},
		"other cluster tombstone": {msg([]byte("k"), nil, kafka.Header{Key: headerGroupID, Value: []byte("theirs")}), []string{`"theirs"`}},
		"newer format":            {msg([]byte("k"), env("mine", 2)), []string{"format 2", "Upgrade"}},
		"not json":                {msg([]byte("k"), []byte("{")), []string{"floe did not write", "not JSON"}},
		"not an envelope":         {msg([]byte("k"), []byte(`{"a":1}`)), []string{"not a floe envelope"}},
		"no key":                  {msg(nil, env("mine", 1)), []string{"no key"}},
	} {
		_, err := tb.decode(c.m)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.HasPrefix(name, "other cluster") != errors.Is(err, ErrOtherCluster) {
			t.Errorf("%s: errors.Is(ErrOtherCluster) = %v", name, errors.Is(err, ErrOtherCluster))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not contain %q", name, err, w)
			}
		}
	}
}
