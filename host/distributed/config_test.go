package distributed

import (
	"strings"
	"testing"
	"time"
)

func baseConfig() map[string]string {
	return map[string]string{
		"bootstrap.servers":    "127.0.0.1:9092",
		"group.id":             "floe-prod",
		"config.storage.topic": "floe-configs",
		"offset.storage.topic": "floe-offsets",
		"status.storage.topic": "floe-status",
		"listeners":            "http://127.0.0.1:18083",
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig(baseConfig(), "w.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "http://127.0.0.1:18083" || c.Worker.WorkerID != "127.0.0.1:18083" {
		t.Errorf("url %q, worker id %q", c.URL, c.Worker.WorkerID)
	}
	if c.SessionTimeout != 10*time.Second || c.HeartbeatInterval != 3*time.Second {
		t.Errorf("session %s, heartbeat %s", c.SessionTimeout, c.HeartbeatInterval)
	}
	if c.Stores.GroupID != "floe-prod" || c.Stores.ConfigTopic.Name != "floe-configs" {
		t.Errorf("stores %+v", c.Stores)
	}
	if c.Worker.ConnectorDefaults["bootstrap.servers"] != "127.0.0.1:9092" {
		t.Errorf("connectors do not inherit bootstrap.servers: %v", c.Worker.ConnectorDefaults)
	}
}

func TestParseConfigAdvertised(t *testing.T) {
	raw := baseConfig()
	raw["listeners"] = "http://0.0.0.0:18083"
	raw["rest.advertised.host.name"] = "worker1.example"
	raw["rest.advertised.port"] = "8443"
	raw["rest.advertised.listener"] = "https"
	raw["worker.id"] = "w1"
	c, err := ParseConfig(raw, "w.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "https://worker1.example:8443" || c.Worker.WorkerID != "w1" {
		t.Errorf("url %q, worker id %q", c.URL, c.Worker.WorkerID)
	}
}

func TestParseConfigErrorsNameTheKey(t *testing.T) {
	for key, tc := range map[string]struct {
		value, want string
	}{
		"group.id":              {"", "group.id is required"},
		"config.storage.topic":  {"", "config.storage.topic is required"},
		"session.timeout.ms":    {"soon", "session.timeout.ms"},
		"heartbeat.interval.ms": {"20000", "heartbeat.interval.ms (20000) must be below session.timeout.ms"},
		"rest.advertised.port":  {"99999", "rest.advertised.port"},
		"listeners":             {"http://127.0.0.1:0", "has no fixed port"},
		"status.storage.topic":  {"floe-configs", "each store needs its own topic"},
		"no.such.key":           {"x", `unknown key "no.such.key"`},
	} {
		raw := baseConfig()
		if tc.value == "" {
			delete(raw, key)
		} else {
			raw[key] = tc.value
		}
		_, err := ParseConfig(raw, "w.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: error %v, want one containing %q", key, tc.value, err, tc.want)
		}
	}
}

func TestRestartOf(t *testing.T) {
	type want struct {
		name string
		task int
	}
	for path, w := range map[string]want{
		"/connectors/orders/restart":          {"orders", -1},
		"/connectors/a%2Fb/tasks/1/restart":   {"a/b", 1},
		"/connectors/orders/tasks/x/restart":  {},
		"/connectors/orders/pause":            {},
		"/connectors/orders/tasks/1/status":   {},
		"/connectors":                         {},
		"/connector-plugins/x/config/restart": {},
	} {
		got, task, ok := restartOf(path)
		if got != w.name || ok != (w.name != "") || (ok && task != w.task) {
			t.Errorf("restartOf(%q) = %q, %d, %v; want %q, %d", path, got, task, ok, w.name, w.task)
		}
	}
}

func TestOffsetsOf(t *testing.T) {
	for path, want := range map[string]string{
		"/connectors/orders/offsets":       "orders",
		"/connectors/a%2Fb/offsets":        "a/b",
		"/connectors/orders/offsets/reset": "",
		"/connectors/orders/status":        "",
		"/connectors//offsets":             "",
		"/connectors":                      "",
	} {
		got, ok := offsetsOf(path)
		if got != want || ok != (want != "") {
			t.Errorf("offsetsOf(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}
