package kclient

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// checkSettings is the next step quoted when a client cannot be built or
// cannot reach the brokers.
const checkSettings = "check the worker's bootstrap.servers, security.protocol, sasl.* and ssl.*"

// ProducerChannels sizes a producer's Go channels. confluent-kafka-go's
// defaults (a million events, a million messages) are 24 MiB of Go heap
// per producer, allocated at creation and scanned by every garbage
// collection: the six producers of a distributed worker held 141 MiB
// (pprof), above the host's share of memory.max.bytes, and its GC took
// most of a core. floe's producers wait for each delivery or drain their
// events as they come, so a smaller buffer only makes a slow reader wait
// (librdkafka's own queue holds the rest).
var ProducerChannels = kafka.ConfigMap{"go.events.channel.size": 10_000, "go.produce.channel.size": 16}

// NewProducer builds a producer from the config plus extra, with
// ProducerChannels unless extra sizes them. librdkafka's logs go to
// logger (nil discards them) with secrets redacted; the caller reads
// Events() as usual and closes the producer.
func (c Config) NewProducer(logger *slog.Logger, extra kafka.ConfigMap) (*kafka.Producer, error) {
	cm := c.ConfigMap(ProducerChannels, extra, kafka.ConfigMap{"go.logs.channel.enable": true})
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w (%s)", c.RedactError(err, extra), checkSettings)
	}
	go c.forwardLogs(p.Logs(), logger, extra)
	return p, nil
}

// NewConsumer builds a consumer from the config plus extra (which must
// hold group.id: librdkafka wants one even for assigned partitions).
// librdkafka's logs go to logger with secrets redacted.
func (c Config) NewConsumer(logger *slog.Logger, extra kafka.ConfigMap) (*kafka.Consumer, error) {
	cm := c.ConfigMap(extra, kafka.ConfigMap{"go.logs.channel.enable": true})
	cons, err := kafka.NewConsumer(&cm)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w (%s)", c.RedactError(err, extra), checkSettings)
	}
	go c.forwardLogs(cons.Logs(), logger, extra)
	return cons, nil
}

// forwardLogs passes librdkafka's log lines to logger until the client
// closes the channel.
func (c Config) forwardLogs(ch chan kafka.LogEvent, logger *slog.Logger, extra kafka.ConfigMap) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for ev := range ch {
		LogAt(logger, ev.Level, "kafka client: "+c.Redact(ev.Message, extra), "facility", ev.Tag, "client", ev.Name)
	}
}

// LogAt logs msg on logger at the slog level of librdkafka's syslog
// level (0-7: emergency … debug).
func LogAt(logger *slog.Logger, syslog int, msg string, args ...any) {
	switch {
	case syslog <= 3:
		logger.Error(msg, args...)
	case syslog == 4:
		logger.Warn(msg, args...)
	case syslog <= 6:
		logger.Info(msg, args...)
	default:
		logger.Debug(msg, args...)
	}
}

// ErrorLog keeps a client's latest distinct error events (librdkafka
// reports "1/1 brokers are down" or "SASL authentication failed" as events,
// not as the result of the call that waits), so an error returned on a
// timeout can say why. Safe for concurrent use; the zero value is ready.
type ErrorLog struct {
	mu     sync.Mutex
	recent []string
	fatal  error
}

// recentErrors is how many distinct messages an ErrorLog keeps.
const recentErrors = 3

// Note records an error event.
func (l *ErrorLog) Note(e kafka.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := e.Error()
	l.recent = slices.DeleteFunc(l.recent, func(s string) bool { return s == msg })
	l.recent = append(l.recent, msg)
	if len(l.recent) > recentErrors {
		l.recent = l.recent[len(l.recent)-recentErrors:]
	}
	if l.fatal == nil && (e.IsFatal() || e.Code() == kafka.ErrAuthentication) {
		l.fatal = e
	}
}

// Fatal returns the first error retrying cannot cure (a fatal error or a
// failed authentication), or nil.
func (l *ErrorLog) Fatal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// Recent returns the latest distinct error messages joined by "; ", or "".
func (l *ErrorLog) Recent() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.recent, "; ")
}
