package kafka

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// maxKeyInMessage bounds how much of a key an error message quotes.
const maxKeyInMessage = 64

// recordRef names a record in messages: topic, partition, offset.
func recordRef(p *partition, r *record) string {
	return fmt.Sprintf("topic %s partition %d offset %d", p.topic, p.partition, r.offset)
}

// quoteKey renders a key for an error message: quoted text when it is
// UTF-8, hex otherwise, cut to maxKeyInMessage bytes.
func quoteKey(key []byte) string {
	if key == nil {
		return "null"
	}
	cut := ""
	if len(key) > maxKeyInMessage {
		key, cut = key[:maxKeyInMessage], "…"
	}
	if utf8.Valid(key) {
		return strconv.Quote(string(key)) + cut
	}
	return fmt.Sprintf("0x%x%s", key, cut)
}

// deadLetter builds the dead letter of a record: the record as it was
// read (key, value with its Confluent header, headers, timestamp), the
// stage and a reason naming topic, partition and offset.
func deadLetter(p *partition, r *record, stage, cause string) sdk.DeadLetter {
	var headers []sdk.Header
	if len(r.headers) > 0 {
		headers = make([]sdk.Header, len(r.headers))
		for i, h := range r.headers {
			headers[i] = sdk.Header{Key: h.Key, Value: h.Value}
		}
	}
	ts := r.tsMs
	if ts < 0 {
		ts = 0
	}
	return sdk.DeadLetter{
		Partition:   p.name,
		Offset:      r.offset,
		TimestampMs: ts,
		Key:         r.key,
		Value:       r.value,
		HeaderList:  headers,
		Stage:       stage,
		Reason:      recordRef(p, r) + ": " + cause,
	}
}

// unframedCause says why a value with no schema id cannot be read.
func unframedCause(value []byte) string {
	if _, _, err := schemas.SplitConfluent(value); err != nil {
		return err.Error()
	}
	return "no schema id"
}

// nullValueError is the task's failure for a tombstone under
// behavior.on.null.values=fail.
func nullValueError(p *partition, r *record) error {
	return fmt.Errorf("kafka: %s key %s: the value is null (a tombstone) and %s=%s; set it to %s (dead-letter queue) or %s to let tombstones through",
		recordRef(p, r), quoteKey(r.key), KeyNullValues, NullValuesFail, NullValuesDLQ, NullValuesIgnore)
}

// deadLetterError is the task's failure when the host refuses dead
// letters (errors.tolerance=none): it names the first bad record.
func deadLetterError(letters []sdk.DeadLetter, err error) error {
	more := ""
	if len(letters) > 1 {
		more = fmt.Sprintf(" (and %d more bad records in the same batch)", len(letters)-1)
	}
	return fmt.Errorf("kafka: %s [stage %s]%s: %w", letters[0].Reason, letters[0].Stage, more, err)
}
