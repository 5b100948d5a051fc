package kclient

import (
	"errors"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func TestFromWorker(t *testing.T) {
	c, err := FromWorker(map[string]string{
		"bootstrap.servers": " k1:9092,k2:9092 ",
		"security.protocol": "SASL_SSL",
		"sasl.mechanism":    "SCRAM-SHA-512",
		"sasl.username":     "floe",
		"sasl.password":     "hunter2-secret",
		"ssl.ca.location":   "/etc/ca.pem",
		"ssl.key.password":  "keypass-42",
		"group.id":          "floe-cluster",
		"listeners":         "http://0.0.0.0:8083",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := c.ConfigMap(kafka.ConfigMap{"client.id": "x", "sasl.username": "override"})
	want := map[string]any{
		"bootstrap.servers": "k1:9092,k2:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.username": "override", "sasl.password": "hunter2-secret", "ssl.ca.location": "/etc/ca.pem",
		"ssl.key.password": "keypass-42", "client.id": "x", "allow.auto.create.topics": false,
	}
	if len(m) != len(want) {
		t.Errorf("config map has %d keys, want %d: %v", len(m), len(want), m)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// The worker's own keys are not client settings.
	if _, ok := m["group.id"]; ok {
		t.Error("group.id leaked into the client settings")
	}
	s := c.String()
	if strings.Contains(s, "hunter2") || strings.Contains(s, "keypass") || !strings.Contains(s, "sasl.password=[redacted]") || !strings.Contains(s, "sasl.username=floe") {
		t.Errorf("String() = %s", s)
	}
	if got := c.Redact("auth failed for floe/hunter2-secret and keypass-42"); got != "auth failed for floe/[redacted] and [redacted]" {
		t.Errorf("Redact = %q", got)
	}
	base := errors.New("bad value hunter2-secret")
	red := c.RedactError(base)
	if strings.Contains(red.Error(), "hunter2") || !errors.Is(red, base) {
		t.Errorf("RedactError = %v (is base: %v)", red, errors.Is(red, base))
	}
	if got := c.Redact("token tok-123", kafka.ConfigMap{"sasl.oauthbearer.client.secret": "tok-123"}); got != "token [redacted]" {
		t.Errorf("Redact with extra = %q", got)
	}
}

func TestFromWorkerErrors(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]string
		want []string
	}{
		{map[string]string{}, []string{"bootstrap.servers is required"}},
		{map[string]string{"bootstrap.servers": "k:1", "security.protocol": "TLS"}, []string{"security.protocol", `"TLS"`, "SASL_SSL"}},
		{map[string]string{"bootstrap.servers": "k:1", "sasl.jaas.config": "org.apache...PlainLoginModule required password=\"pw-999\";"},
			[]string{"sasl.jaas.config", "Java client setting", "sasl.username and sasl.password"}},
		{map[string]string{"bootstrap.servers": "k:1", "ssl.truststore.location": "/x.jks"}, []string{"ssl.truststore.location", "ssl.ca.location"}},
	} {
		_, err := FromWorker(tc.raw)
		if err == nil {
			t.Errorf("%v: no error", tc.raw)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not contain %q", tc.raw, err, w)
			}
		}
		if strings.Contains(err.Error(), "pw-999") {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

func TestIsSecret(t *testing.T) {
	for k, want := range map[string]bool{
		"sasl.password": true, "ssl.key.password": true, "ssl.keystore.password": true, "ssl.key.pem": true,
		"sasl.oauthbearer.client.secret": true, "sasl.oauthbearer.config": true, "sasl.jaas.config": true,
		"sasl.username": false, "ssl.ca.location": false, "ssl.certificate.pem": false, "security.protocol": false,
	} {
		if IsSecret(k) != want {
			t.Errorf("IsSecret(%s) = %v", k, !want)
		}
	}
}

// TestNewClientErrorIsRedacted: librdkafka rejects a bad setting with a
// message; a secret given per use must not show in it.
func TestNewClientErrorIsRedacted(t *testing.T) {
	c, err := FromWorker(map[string]string{"bootstrap.servers": "127.0.0.1:1", "sasl.password": "pw-abc-123"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.NewProducer(nil, kafka.ConfigMap{"acks": "pw-abc-123"})
	if err == nil {
		t.Fatal("bad acks accepted")
	}
	if strings.Contains(err.Error(), "pw-abc-123") || !strings.Contains(err.Error(), "acks") {
		t.Fatalf("error %q", err)
	}
}
