package dlq

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

// recentErrors is how many distinct producer errors a failure names.
const recentErrors = 3

// oauthTokenFailure starts librdkafka's message when the OAUTHBEARER
// token could not be fetched from the identity provider: that provider
// may only be away, unlike a broker that refuses the credentials.
const oauthTokenFailure = "Failed to acquire SASL OAUTHBEARER token"

// refused reports whether e says the brokers refuse the producer: its
// credentials, its SASL mechanism, or an ACL its principal lacks (on the
// topic, the cluster, a transactional id). No retry cures those until a
// human changes a setting or an ACL. Brokers down, transport errors,
// timeouts and leader elections are not refusals: librdkafka retries them.
func refused(e kafka.Error) bool {
	switch e.Code() {
	case kafka.ErrAuthentication, kafka.ErrSaslAuthenticationFailed:
		return !strings.Contains(e.Error(), oauthTokenFailure)
	case kafka.ErrUnsupportedSaslMechanism, kafka.ErrTopicAuthorizationFailed,
		kafka.ErrClusterAuthorizationFailed, kafka.ErrTransactionalIDAuthorizationFailed:
		return true
	}
	return false
}

// noteError keeps the producer's last distinct errors for the messages of
// failed Reports, and the first refusal and the first fatal error since
// the current producer was created.
func (r *Reporter) noteError(e kafka.Error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	msg := e.Error()
	r.recent = slices.DeleteFunc(r.recent, func(s string) bool { return s == msg })
	r.recent = append(r.recent, msg)
	if len(r.recent) > recentErrors {
		r.recent = r.recent[len(r.recent)-recentErrors:]
	}
	if r.refusal == nil && refused(e) {
		r.refusal = e
	}
	if r.fatal == nil && e.IsFatal() {
		r.fatal = e
	}
}

// forgetErrors starts the count of refusals and fatal errors afresh, for
// a new producer.
func (r *Reporter) forgetErrors() {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	r.refusal, r.fatal = nil, nil
}

// stuck returns the refusal or fatal error that ends a connect attempt
// early, if the producer reported one.
func (r *Reporter) stuck() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.refusal != nil {
		return r.refusal
	}
	return r.fatal
}

// settle marks err, a Report error, [sdk.Permanent] when the brokers
// refused the producer: cause (what the client or the broker answered)
// is a refusal, or the producer reported one. A restart would meet the
// same refusal, so the task fails once and waits for a human, told what
// to fix. Everything else is left to be retried: an outage passes, and a
// fatal error retires its producer (see retire), so the next Report
// connects a new one.
func (r *Reporter) settle(err, cause error) error {
	var ke kafka.Error
	if !errors.As(cause, &ke) || !refused(ke) {
		r.errMu.Lock()
		seen := r.refusal
		r.errMu.Unlock()
		if seen == nil {
			return err
		}
	}
	return sdk.Permanent(fmt.Errorf("%w; the brokers refuse the dead-letter producer: fix its credentials (the connector's kafka.security.protocol, kafka.sasl.*, kafka.ssl.*, or %s*) or grant its principal WRITE and DESCRIBE on topic %s (and CREATE, for floe to create it)",
		err, KeyProducerPrefix, r.cfg.Topic))
}

// errorf builds a Report error: it names the topic and ends with the
// producer's last errors, which say why the broker did not answer.
func (r *Reporter) errorf(format string, args ...any) error {
	err := fmt.Errorf("dead-letter queue %s: "+format, append([]any{r.cfg.Topic}, args...)...)
	r.errMu.Lock()
	recent := strings.Join(r.recent, "; ")
	r.errMu.Unlock()
	if recent == "" {
		return err
	}
	return fmt.Errorf("%w (producer: %s)", err, recent)
}
