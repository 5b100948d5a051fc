package kafka

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

func saslSettings(t *testing.T) settings {
	t.Helper()
	cfg := minimalConfig()
	cfg[KeySecurityProtocol] = "SASL_SSL"
	cfg[KeySASLMechanisms] = "SCRAM-SHA-512"
	cfg[KeySASLUsername] = "floe-reader"
	cfg[KeySASLPassword] = "s3cret-pass"
	cfg[KeyConsumerGroupID] = "orders-group"
	s, err := parseSettings(sdk.NewConfig(cfg), "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The brokers refusing the credentials or an ACL is permanent and names
// what to fix; every error librdkafka retries by itself (brokers down,
// transport, timeouts, a coordinator moving) is not a refusal at all.
func TestRefusalIsPermanentAndTransientErrorsAreNot(t *testing.T) {
	s := saslSettings(t)
	refused := []struct {
		code  ckafka.ErrorCode
		msg   string
		topic string
		want  []string
	}{
		{ckafka.ErrAuthentication, "SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512", "",
			[]string{"refused the consumer's credentials", `kafka.sasl.username="floe-reader"`, `kafka.sasl.mechanisms="SCRAM-SHA-512"`, `kafka.security.protocol="SASL_SSL"`, "kafka.sasl.password", "invalid credentials"}},
		{ckafka.ErrSaslAuthenticationFailed, "Broker: SASL Authentication failed", "", []string{"refused the consumer's credentials", "kafka.sasl.password"}},
		{ckafka.ErrUnsupportedSaslMechanism, "Broker: Unsupported SASL mechanism", "", []string{`"SCRAM-SHA-512"`, "kafka.sasl.mechanisms"}},
		{ckafka.ErrTopicAuthorizationFailed, "Subscribed topic not available: orders: Broker: Topic authorization failed", "orders",
			[]string{"topic orders", `user "floe-reader"`, "READ and DESCRIBE", "topics"}},
		{ckafka.ErrTopicAuthorizationFailed, "Broker: Topic authorization failed", "", []string{"topics=orders", "READ and DESCRIBE"}},
		{ckafka.ErrGroupAuthorizationFailed, "JoinGroup failed: Broker: Group authorization failed", "",
			[]string{"consumer group orders-group", "READ on the group", "consumer.group.id"}},
		{ckafka.ErrClusterAuthorizationFailed, "Broker: Cluster authorization failed", "", []string{"cluster", `user "floe-reader"`}},
	}
	for _, c := range refused {
		err := s.refusal(ckafka.NewError(c.code, c.msg, false), c.topic)
		if err == nil {
			t.Errorf("%v (%s): not a refusal", c.code, c.msg)
			continue
		}
		if !errors.Is(err, sdk.ErrPermanent) || errors.Is(err, sdk.ErrTransient) {
			t.Errorf("%v: %v is not marked permanent", c.code, err)
		}
		var ke ckafka.Error
		if !errors.As(err, &ke) || ke.Code() != c.code {
			t.Errorf("%v: the refusal does not wrap librdkafka's error: %v", c.code, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not contain %q", c.code, err, w)
			}
		}
		if strings.Contains(err.Error(), "s3cret-pass") {
			t.Errorf("%v: the refusal shows the password: %v", c.code, err)
		}
	}

	transient := []ckafka.ErrorCode{
		ckafka.ErrAllBrokersDown, ckafka.ErrTransport, ckafka.ErrTimedOut, ckafka.ErrResolve, ckafka.ErrSsl,
		ckafka.ErrRequestTimedOut, ckafka.ErrNetworkException, ckafka.ErrBrokerNotAvailable,
		ckafka.ErrNotCoordinator, ckafka.ErrCoordinatorNotAvailable, ckafka.ErrCoordinatorLoadInProgress,
		ckafka.ErrRebalanceInProgress, ckafka.ErrUnknownMemberID, ckafka.ErrIllegalGeneration,
		ckafka.ErrLeaderNotAvailable, ckafka.ErrNotLeaderForPartition, ckafka.ErrUnknownTopicOrPart,
	}
	for _, code := range transient {
		if err := s.refusal(ckafka.NewError(code, code.String(), false), ""); err != nil {
			t.Errorf("%v is transient, but it is a refusal: %v", code, err)
		}
	}
	// The identity provider that issues OAUTHBEARER tokens may only be
	// away: librdkafka asks it again.
	if err := s.refusal(ckafka.NewError(ckafka.ErrAuthentication, oauthTokenFailure+": connect: connection refused", false), ""); err != nil {
		t.Errorf("an OAUTHBEARER token the identity provider did not issue is a refusal: %v", err)
	}
}

// A refusal arriving as a consumer error or on a partition's message
// fails the task once (Read returns it, marked permanent); a transient
// error leaves it running.
func TestRefusalFailsTheTask(t *testing.T) {
	newTask := func() *task {
		return &task{set: saslSettings(t), buf: newBuffer(10, 0), log: slog.New(slog.DiscardHandler)}
	}

	tk := newTask()
	tk.handle(ckafka.NewError(ckafka.ErrAllBrokersDown, "1/1 brokers are down", false))
	tk.handle(ckafka.NewError(ckafka.ErrTransport, "Connection refused", false))
	if err := tk.buf.err(); err != nil {
		t.Fatalf("transient consumer errors failed the task: %v", err)
	}
	tk.handle(ckafka.NewError(ckafka.ErrAuthentication, "SASL authentication error: invalid credentials", false))
	tk.handle(ckafka.NewError(ckafka.ErrGroupAuthorizationFailed, "Group authorization failed", false))
	err := tk.buf.err()
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "kafka.sasl.password") {
		t.Fatalf("after a SASL authentication failure the task fails with %v; want the first refusal, permanent, naming kafka.sasl.password", err)
	}

	tk = newTask()
	topic := "orders"
	tk.handle(&ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: 0,
		Error: ckafka.NewError(ckafka.ErrTopicAuthorizationFailed, "Subscribed topic not available: orders: Broker: Topic authorization failed", false)}})
	if err := tk.buf.err(); !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "topic orders") {
		t.Fatalf("a topic authorization failure on a partition fails the task with %v; want a permanent error naming topic orders", err)
	}
	if len(tk.local) != 0 {
		t.Fatalf("the failed message was buffered")
	}
}
