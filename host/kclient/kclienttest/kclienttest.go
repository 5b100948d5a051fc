// Package kclienttest finds the real Kafka broker that e2e/services/up
// started, for tests of packages that talk to Kafka (kclient, the Kafka
// stores). It is for tests only.
//
// A test without a broker is skipped with a message saying how to start
// one, unless FLOE_REQUIRE_SERVICES=1 (make test sets it), which fails it
// instead, so nothing passes there by skipping.
package kclienttest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
)

// RequireEnv turns a missing broker into a failure.
const RequireEnv = "FLOE_REQUIRE_SERVICES"

// Broker describes the broker a test runs against.
type Broker struct {
	// Bootstrap is the PLAINTEXT bootstrap list (FLOE_KAFKA_BOOTSTRAP).
	Bootstrap string
	// Brokers is the broker count (FLOE_KAFKA_BROKERS, default 1).
	Brokers int
	// SASLBootstrap, SASLUser and SASLPassword describe the SASL_PLAINTEXT
	// listener (FLOE_KAFKA_SASL_*), empty when the services run without
	// --sasl.
	SASLBootstrap, SASLUser, SASLPassword string
}

// Require returns the broker from the environment. Without
// FLOE_KAFKA_BOOTSTRAP it skips t, or fails it when
// FLOE_REQUIRE_SERVICES=1.
func Require(t testing.TB) Broker {
	t.Helper()
	b := Broker{
		Bootstrap:     os.Getenv("FLOE_KAFKA_BOOTSTRAP"),
		Brokers:       1,
		SASLBootstrap: os.Getenv("FLOE_KAFKA_SASL_BOOTSTRAP"),
		SASLUser:      os.Getenv("FLOE_KAFKA_SASL_USER"),
		SASLPassword:  os.Getenv("FLOE_KAFKA_SASL_PASSWORD"),
	}
	if n, err := strconv.Atoi(os.Getenv("FLOE_KAFKA_BROKERS")); err == nil && n > 0 {
		b.Brokers = n
	}
	if b.Bootstrap == "" {
		Unavailable(t, "needs a Kafka broker: run e2e/services/up, then . /tmp/floe-services/env (FLOE_KAFKA_BOOTSTRAP is not set)")
	}
	return b
}

// skipper is the part of testing.TB Unavailable uses.
type skipper interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
}

// Unavailable skips t because something it needs is missing, saying what
// (msg completes "this test …"), or fails it when FLOE_REQUIRE_SERVICES=1,
// so that nothing passes under make test by skipping. Tests that find
// their services themselves (librdkafka's mock cluster) skip through it.
func Unavailable(t skipper, msg string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 but this test %s", RequireEnv, msg)
		return
	}
	t.Skip("skipped: this test " + msg)
}

// RequireSASL is Require for tests of the SASL listener; it skips (or
// fails) when the services run without --sasl.
func RequireSASL(t testing.TB) Broker {
	t.Helper()
	b := Require(t)
	if b.SASLBootstrap == "" || b.SASLUser == "" {
		Unavailable(t, "needs Kafka's SASL listener: start the services with e2e/services/up --sasl (FLOE_KAFKA_SASL_BOOTSTRAP is not set)")
	}
	return b
}

// Worker returns the worker config keys that point at the broker.
func (b Broker) Worker() map[string]string {
	return map[string]string{"bootstrap.servers": b.Bootstrap}
}

// UniqueName returns prefix followed by a random suffix, for topics and
// groups that must not clash with other runs against the same broker.
func UniqueName(prefix string) string {
	var s [6]byte
	_, _ = rand.Read(s[:])
	return prefix + "-" + hex.EncodeToString(s[:])
}
