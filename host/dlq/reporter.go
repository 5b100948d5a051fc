package dlq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

// Reporter is one connector's dead-letter queue. Its methods are safe for
// concurrent use (source tasks report from their own goroutines).
//
// The producer is created on the first record to store, so a connector
// that never dead-letters never connects to Kafka. Connecting (and
// creating the topic) runs on its own, bounded by Config.ConnectTimeout,
// not by the Report that started it: a Report whose ctx ends first
// returns, and the next one waits for the same attempt. Records produced
// are remembered (by partition, offset and stage) while in flight and for
// a while after the broker answered, so a Report retried for the same
// records waits for their delivery, or takes its answer, instead of
// producing them again.
type Reporter struct {
	cfg    Config
	logger *slog.Logger

	mu           sync.Mutex
	producer     *kafka.Producer         // connected, topic in place
	retired      []*kafka.Producer       // hit a fatal error; closed with the reporter
	attempt      *connectAttempt         // connecting, or failed and not yet reported
	letters      map[letterKey]*delivery // in flight, or answered and not yet forgotten
	answeredKeys []letterKey             // answered deliveries, oldest first
	closed       bool
	wg           sync.WaitGroup // the connect attempt and the producer's event loops

	errMu   sync.Mutex
	recent  []string // the producer's last distinct errors, oldest first
	refusal error    // the brokers refused the current producer (credentials, ACLs)
	fatal   error    // the current producer hit a fatal error
}

// NewReporter returns the connector's reporter. It connects to nothing yet:
// the producer and the topic are created on the first record to store.
// logger should carry the connector's labels; the producer's own logs and
// errors go there.
func NewReporter(cfg Config, logger *slog.Logger) *Reporter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Reporter{cfg: cfg, logger: logger, letters: map[letterKey]*delivery{}}
}

// Config returns the reporter's settings.
func (r *Reporter) Config() Config { return r.cfg }

// Report handles records task could not read or write. It returns nil when
// they are stored in the dead-letter topic (acknowledged by the broker) or,
// without a topic, logged; the caller counts them as dead letters then. It
// returns an error naming the first record when errors.tolerance is none
// (the task must fail with it), or when the topic could not take them
// (the task fails too: skipping them would lose records); that error names
// the topic and the producer's last errors ("1/1 brokers are down",
// "SASL authentication failed", …); it is marked [sdk.Permanent] when the
// brokers refused the producer's credentials or an ACL (no restart cures
// that), and left unmarked for an outage. ctx bounds the wait for the broker:
// when it ends first, Report returns ctx's error and a later Report of the
// same records picks up where this one stopped.
func (r *Reporter) Report(ctx context.Context, o Origin, records []sdk.DeadLetter) error {
	if len(records) == 0 {
		return nil
	}
	toTopic := r.cfg.TolerateAll && r.cfg.Topic != ""
	if r.cfg.LogEnable && !toTopic {
		for _, rec := range records {
			r.log(o, rec)
		}
	}
	if !r.cfg.TolerateAll {
		rec := records[0]
		more := ""
		if len(records) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(records)-1)
		}
		err := fmt.Errorf("record %s@%d failed at stage %s: %s%s; errors.tolerance is none, set it to all (with errors.deadletterqueue.topic.name) to skip such records",
			rec.Partition, rec.Offset, rec.Stage, rec.Reason, more)
		// A restart would read the same record again. (A schema id the
		// registry did not know was retried by the source first.)
		return sdk.Permanent(err)
	}
	if r.cfg.Topic == "" {
		if !r.cfg.LogEnable {
			// Connect drops them silently here; floe at least says so.
			r.logger.Warn("skipping records (errors.tolerance=all, no errors.deadletterqueue.topic.name)",
				"connector", o.Connector, "task", o.Task, "records", len(records),
				"first_partition", records[0].Partition, "first_offset", records[0].Offset, "reason", records[0].Reason)
		}
		return nil
	}
	p, err := r.ready(ctx)
	if err != nil {
		return err
	}
	return r.produce(ctx, p, o, records)
}

func (r *Reporter) log(o Origin, rec sdk.DeadLetter) {
	args := []any{"connector", o.Connector, "task", o.Task, "partition", rec.Partition,
		"offset", rec.Offset, "stage", rec.Stage, "reason", rec.Reason}
	if r.cfg.LogIncludeMessages {
		args = append(args, "key", string(rec.Key), "value", string(rec.Value))
	}
	r.logger.Error("error handling record", args...)
}

// Close flushes and closes the producer and stops a connect attempt. ctx
// bounds the flush; records were acknowledged before Report returned, so
// nothing is lost when it expires.
func (r *Reporter) Close(ctx context.Context) {
	r.mu.Lock()
	p, a, retired := r.producer, r.attempt, r.retired
	r.producer, r.retired, r.closed = nil, nil, true
	letters := r.letters
	r.letters = map[letterKey]*delivery{}
	r.mu.Unlock()
	if a != nil {
		a.cancel()
	}
	if p != nil {
		ms := 5000
		if d, ok := ctx.Deadline(); ok {
			ms = int(max(time.Until(d), 0).Milliseconds())
		}
		p.Flush(ms)
		p.Close()
	}
	for _, p := range retired {
		p.Close()
	}
	// Deliveries the producer never reported end now.
	for _, d := range letters {
		d.finish(errors.New("the producer was closed before the broker acknowledged"))
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
