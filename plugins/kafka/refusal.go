package kafka

import (
	"errors"
	"fmt"
	"strings"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

// oauthTokenFailure starts librdkafka's message when the OAUTHBEARER
// token could not be fetched from the identity provider: that provider
// may only be away, unlike a broker that refuses the credentials.
const oauthTokenFailure = "Failed to acquire SASL OAUTHBEARER token"

// refusal returns the error a task fails with when e says the brokers
// refuse this consumer: its credentials, its SASL mechanism, or its
// principal's ACLs on the topic, the group or the cluster. No retry can
// cure those until a human changes a setting or an ACL, so the error is
// marked [sdk.Permanent] (the host does not restart the task) and names
// what to fix. topic is the topic the error came with, if any.
//
// Everything else is nil: all brokers down, transport errors, timeouts,
// a coordinator moving or not yet available, a leader election, a topic
// not created yet. librdkafka retries those by itself, and the task waits.
func (s *settings) refusal(e ckafka.Error, topic string) error {
	user, _ := s.kafka["sasl.username"].(string)
	principal := "the connector's principal"
	if user != "" {
		principal = fmt.Sprintf("the connector's principal (user %q)", user)
	}
	var err error
	switch e.Code() {
	case ckafka.ErrAuthentication, ckafka.ErrSaslAuthenticationFailed:
		if strings.Contains(e.Error(), oauthTokenFailure) {
			return nil
		}
		mechanism, _ := s.kafka["sasl.mechanisms"].(string)
		protocol, _ := s.kafka["security.protocol"].(string)
		err = fmt.Errorf("kafka: the brokers refused the consumer's credentials (%s=%q, %s=%q, %s=%q): %w; check %s and %s (or the kafka.ssl.* client certificate) and update the connector's config",
			KeySecurityProtocol, protocol, KeySASLMechanisms, mechanism, KeySASLUsername, user, e, KeySASLUsername, KeySASLPassword)
	case ckafka.ErrUnsupportedSaslMechanism:
		mechanism, _ := s.kafka["sasl.mechanisms"].(string)
		err = fmt.Errorf("kafka: the brokers do not enable SASL mechanism %q: %w; set %s to one they enable", mechanism, e, KeySASLMechanisms)
	case ckafka.ErrTopicAuthorizationFailed:
		what := "a subscribed topic (" + s.subscription() + ")"
		if topic != "" {
			what = "topic " + topic
		}
		err = fmt.Errorf("kafka: the brokers refuse the consumer access to %s: %w; grant %s READ and DESCRIBE on it, or change %s",
			what, e, principal, KeyTopics)
	case ckafka.ErrGroupAuthorizationFailed:
		err = fmt.Errorf("kafka: the brokers refuse the consumer access to consumer group %s: %w; grant %s READ on the group, or set %s to a group it may use",
			s.groupID, e, principal, KeyConsumerGroupID)
	case ckafka.ErrClusterAuthorizationFailed:
		err = fmt.Errorf("kafka: the brokers refuse the consumer a cluster request: %w; grant %s the cluster ACL it needs (DESCRIBE; CREATE with kafka.allow.auto.create.topics=true)",
			e, principal)
	default:
		return nil
	}
	return sdk.Permanent(err)
}

// subscription names what the task subscribes to, for messages.
func (s *settings) subscription() string {
	if s.topicsRegex != "" {
		return KeyTopicsRegex + "=" + s.topicsRegex
	}
	return KeyTopics + "=" + strings.Join(s.topics, ",")
}

// refused fails the task when err is a refusal (see [settings.refusal])
// and reports whether it was. The first one is logged; librdkafka repeats
// it at every reconnect until the host closes the task. Runs on the poll
// goroutine.
func (t *task) refused(err error, topic string) bool {
	var ke ckafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	r := t.set.refusal(ke, topic)
	if r == nil {
		return false
	}
	if t.buf.err() == nil {
		t.log.Error("kafka: the brokers refuse this task; it fails, and floe does not restart it until the setting or ACL is fixed", "error", r)
	}
	t.buf.fail(r)
	return true
}
