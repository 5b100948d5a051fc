package kclient

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

// Worker config keys this package reads (Kafka Connect's distributed
// worker keys; the security ones are librdkafka's names as well).
const (
	KeyBootstrapServers = "bootstrap.servers"
	KeySecurityProtocol = "security.protocol"
	// PrefixSASL and PrefixSSL select the worker's SASL and TLS settings,
	// passed to librdkafka as they are.
	PrefixSASL = "sasl."
	PrefixSSL  = "ssl."
)

// redacted replaces a secret in errors, logs and String.
const redacted = "[redacted]"

// javaOnlyHint returns, for a Java client setting librdkafka does not
// have, the librdkafka way of saying the same thing, so a Connect worker
// config moved over gets a next step instead of librdkafka's "No such
// configuration property".
func javaOnlyHint(key string) (string, bool) {
	switch key {
	case "sasl.jaas.config":
		return "set sasl.username and sasl.password (and sasl.mechanism) instead", true
	case "sasl.login.callback.handler.class":
		return "librdkafka has no login callbacks; for OAUTHBEARER use sasl.oauthbearer.method=oidc and sasl.oauthbearer.*", true
	case "sasl.client.callback.handler.class":
		return "librdkafka has no client callbacks", true
	case "ssl.truststore.location":
		return "set ssl.ca.location to a PEM file of the CA certificates", true
	case "ssl.truststore.password":
		return "librdkafka reads CA certificates from PEM (ssl.ca.location), which has no password", true
	case "ssl.truststore.type":
		return "librdkafka reads CA certificates from PEM (ssl.ca.location)", true
	case "ssl.truststore.certificates":
		return "set ssl.ca.pem to the CA certificates", true
	case "ssl.keystore.type":
		return "librdkafka reads a PKCS#12 keystore (ssl.keystore.location) or PEM (ssl.certificate.location and ssl.key.location)", true
	case "ssl.keystore.key":
		return "set ssl.key.pem", true
	case "ssl.keystore.certificate.chain":
		return "set ssl.certificate.pem", true
	case "ssl.protocol":
		return "librdkafka negotiates the TLS version itself", true
	case "ssl.enabled.protocols":
		return "librdkafka negotiates the TLS version itself", true
	case "ssl.keymanager.algorithm":
		return "not a librdkafka setting; remove it", true
	case "ssl.trustmanager.algorithm":
		return "not a librdkafka setting; remove it", true
	case "ssl.secure.random.implementation":
		return "not a librdkafka setting; remove it", true
	case "ssl.engine.factory.class":
		return "not a librdkafka setting; see ssl.engine.location", true
	}
	return "", false
}

// Config says how a worker reaches its Kafka cluster: the bootstrap list
// and the worker's own security settings. The zero Config has no brokers;
// build one with [FromWorker]. A Config is immutable and safe to share.
//
// Secrets (passwords, private keys, OAuth client secrets, JAAS configs)
// never appear in what this package returns for people to read: String,
// errors from the constructors and forwarded librdkafka logs have them
// replaced by "[redacted]".
type Config struct {
	bootstrap string
	// security holds security.protocol, sasl.* and ssl.*.
	security map[string]string
}

// FromWorker reads a worker config's Kafka keys: bootstrap.servers
// (required) and the worker's client security settings security.protocol,
// sasl.* and ssl.*, which are librdkafka's names and go to librdkafka as
// they are. Other keys are ignored (the worker checks for unknown keys).
// Errors name the key, never a secret's value.
func FromWorker(raw map[string]string) (Config, error) {
	c := Config{bootstrap: strings.TrimSpace(raw[KeyBootstrapServers]), security: map[string]string{}}
	if c.bootstrap == "" {
		return Config{}, fmt.Errorf("worker config: %s is required (the Kafka brokers the workers share, e.g. broker1:9092,broker2:9092)", KeyBootstrapServers)
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if k != KeySecurityProtocol && !strings.HasPrefix(k, PrefixSASL) && !strings.HasPrefix(k, PrefixSSL) {
			continue
		}
		if hint, ok := javaOnlyHint(k); ok {
			return Config{}, fmt.Errorf("worker config: %s is a Java client setting that librdkafka does not have: %s", k, hint)
		}
		c.security[k] = raw[k]
	}
	if p, ok := c.security[KeySecurityProtocol]; ok {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "plaintext", "ssl", "sasl_plaintext", "sasl_ssl":
		default:
			return Config{}, fmt.Errorf("worker config: %s: %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", KeySecurityProtocol, p)
		}
	}
	return c, nil
}

// Bootstrap returns the bootstrap.servers list.
func (c Config) Bootstrap() string { return c.bootstrap }

// ConfigMap returns librdkafka settings for a producer, consumer or admin
// client: bootstrap.servers, the security settings, allow.auto.create.topics
// false (floe creates its topics itself, compacted; a broker with
// auto.create.topics.enable would otherwise create them with its defaults
// on first use), then extra, whose keys win. The map is a fresh copy.
func (c Config) ConfigMap(extra ...kafka.ConfigMap) kafka.ConfigMap {
	m := kafka.ConfigMap{KeyBootstrapServers: c.bootstrap, "allow.auto.create.topics": false}
	for k, v := range c.security {
		m[k] = v
	}
	for _, e := range extra {
		for k, v := range e {
			m[k] = v
		}
	}
	return m
}

// String lists the settings with secrets redacted, for logs.
func (c Config) String() string {
	parts := []string{KeyBootstrapServers + "=" + c.bootstrap}
	for _, k := range slices.Sorted(maps.Keys(c.security)) {
		v := c.security[k]
		if IsSecret(k) {
			v = redacted
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// IsSecret reports whether the value of librdkafka setting key must not be
// shown: passwords, secrets, private keys, JAAS and OAuth configs. It is
// floe's one classification of secret keys, sdk.IsSecretKey.
func IsSecret(key string) bool { return sdk.IsSecretKey(key) }

// Redact replaces every secret value of the config (and of extra, for
// settings given per use) in s.
func (c Config) Redact(s string, extra ...kafka.ConfigMap) string {
	for _, v := range c.secrets(extra) {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// RedactError returns err with secret values replaced in its message; nil
// stays nil. The result still unwraps to err, so errors.Is and errors.As
// (a kafka.Error's code) keep working; only its message is redacted.
func (c Config) RedactError(err error, extra ...kafka.ConfigMap) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := c.Redact(msg, extra...); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// secrets lists the secret values, longest first so a secret containing
// another is replaced whole.
func (c Config) secrets(extra []kafka.ConfigMap) []string {
	var out []string
	add := func(k string, v any) {
		if s, ok := v.(string); ok && s != "" && IsSecret(k) {
			out = append(out, s)
		}
	}
	for k, v := range c.security {
		add(k, v)
	}
	for _, e := range extra {
		for k, v := range e {
			add(k, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
