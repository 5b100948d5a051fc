package sdk

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEndOfInput is returned by [SourceTask.Read] when the source has nothing
// more to read, ever (a bounded datagen run, for example). The host then
// makes a final checkpoint and stops calling Read.
var ErrEndOfInput = errors.New("end of input")

// ErrSchemaRejected is wrapped by [SinkTask] and [SourceHost.AdmitSchema]
// when rows of a schema cannot be written (an incompatible evolution).
// Records of that schema go to the dead-letter queue or fail the task,
// according to errors.tolerance.
var ErrSchemaRejected = errors.New("schema rejected")

// ErrRecordTooLarge is returned when a single record does not fit in one
// plugin protocol message. The error names the record's source position.
var ErrRecordTooLarge = errors.New("record larger than the plugin message limit")

// ErrUnsupported is returned by the protocol layer when a plugin does not
// implement an optional capability (for example [SinkTaskWithFrontier]).
var ErrUnsupported = errors.New("not supported by this plugin")

// ErrTransient is wrapped (see [Transient]) by a plugin's error when the
// failure is its environment's and expected to pass without a human: a
// refused connection, a timeout, a 5xx answer, a service restarting. The
// host does not count it as the plugin's fault: it retries the call or
// restarts the task with backoff, and says "unavailable" in its logs.
var ErrTransient = errors.New("transient failure")

// ErrPermanent is wrapped (see [Permanent]) by a plugin's error when
// retrying cannot help until a human changes something: credentials the
// external system refuses, a missing bucket or namespace, a table the
// records cannot go into. The host fails the task at once with the reason
// and does not restart it.
var ErrPermanent = errors.New("permanent failure")

// Transient marks err as [ErrTransient]: errors.Is(Transient(err),
// ErrTransient) holds, errors.Is and errors.As still find what err wraps,
// and the message is err's. The mark crosses the plugin protocol. A nil
// err stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ErrTransient}
}

// Permanent marks err as [ErrPermanent], as [Transient] does for
// ErrTransient.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ErrPermanent}
}

// classified is an error marked transient or permanent.
type classified struct{ err, class error }

func (c *classified) Error() string   { return c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.err, c.class} }

// RejectSchema wraps [ErrSchemaRejected] with the reason, which should name
// the field and both types.
func RejectSchema(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSchemaRejected, fmt.Sprintf(format, args...))
}

// RejectionReason is the reason a rejection err gives, without the text
// of [ErrSchemaRejected] itself, wherever a layer wrapped it
// ("iceberg sink: table t: schema rejected: column a: …" gives "iceberg
// sink: table t: column a: …"). A response carries it with Accepted
// false, which already says rejected; the receiving side wraps the
// sentinel again once, so the final error says "schema rejected" once.
func RejectionReason(err error) string {
	reason := strings.ReplaceAll(err.Error(), ErrSchemaRejected.Error()+": ", "")
	if reason == "" {
		return "no reason given"
	}
	return reason
}
