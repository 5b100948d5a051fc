package dlq

import (
	"fmt"
	"slices"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// recentErrors is how many distinct producer errors a failure names.
const recentErrors = 3

// noteError keeps the producer's last distinct errors for the messages of
// failed Reports, and the first one retrying cannot cure.
func (r *Reporter) noteError(e kafka.Error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	msg := e.Error()
	r.recent = slices.DeleteFunc(r.recent, func(s string) bool { return s == msg })
	r.recent = append(r.recent, msg)
	if len(r.recent) > recentErrors {
		r.recent = r.recent[len(r.recent)-recentErrors:]
	}
	if r.fatal == nil && (e.IsFatal() || e.Code() == kafka.ErrAuthentication) {
		r.fatal = e
	}
}

func (r *Reporter) fatalError() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.fatal
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
