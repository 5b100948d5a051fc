package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/hashicorp/go-hclog"

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
	logger hclog.Logger

	mu           sync.Mutex
	producer     *kafka.Producer         // connected, topic in place
	attempt      *connectAttempt         // connecting, or failed and not yet reported
	letters      map[letterKey]*delivery // in flight, or answered and not yet forgotten
	answeredKeys []letterKey             // answered deliveries, oldest first
	closed       bool
	wg           sync.WaitGroup // the connect attempt and the producer's event loops

	errMu  sync.Mutex
	recent []string // the producer's last distinct errors, oldest first
	fatal  error    // an error retrying cannot cure (authentication, fatal)
}

// connectAttempt is one try at creating the producer and the topic.
type connectAttempt struct {
	done   chan struct{} // closed when p or err is set
	cancel context.CancelFunc
	p      *kafka.Producer
	err    error
}

// letterKey identifies a dead letter among those in flight.
type letterKey struct {
	partition string
	offset    int64
	stage     string
}

// delivery is the broker's answer for one produced dead letter.
type delivery struct {
	key  letterKey
	once sync.Once
	done chan struct{} // closed once err is set
	err  error
}

// finish sets the answer; later answers are ignored.
func (d *delivery) finish(err error) {
	d.once.Do(func() {
		d.err = err
		close(d.done)
	})
}

// recentErrors is how many distinct producer errors a failure names.
const recentErrors = 3

// rememberedLetters bounds how many answered deliveries are remembered
// for Reports retried with the same records.
const rememberedLetters = 1 << 16

// NewReporter returns the connector's reporter. It connects to nothing yet:
// the producer and the topic are created on the first record to store.
// logger should carry the connector's labels; the producer's own logs and
// errors go there.
func NewReporter(cfg Config, logger hclog.Logger) *Reporter {
	if logger == nil {
		logger = hclog.NewNullLogger()
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
// "SASL authentication failed", …). ctx bounds the wait for the broker:
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
		return fmt.Errorf("record %s@%d failed at stage %s: %s%s; errors.tolerance is none, set it to all (with errors.deadletterqueue.topic.name) to skip such records",
			rec.Partition, rec.Offset, rec.Stage, rec.Reason, more)
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

// produce sends the records not sent yet and waits for every delivery
// report. A record a retried Report already sent is not sent again: its
// delivery is waited for, or its answer taken (a failed delivery is
// reported once, then forgotten so that a later Report sends it anew).
func (r *Reporter) produce(ctx context.Context, p *kafka.Producer, o Origin, records []sdk.DeadLetter) error {
	waits := make([]*delivery, 0, len(records))
	for _, rec := range records {
		key := letterKey{partition: rec.Partition, offset: rec.Offset, stage: rec.Stage}
		r.mu.Lock()
		d, sent := r.letters[key]
		if !sent {
			d = &delivery{key: key, done: make(chan struct{})}
			r.letters[key] = d
		}
		r.mu.Unlock()
		waits = append(waits, d)
		if sent {
			continue
		}
		if r.cfg.LogEnable { // once, not per retry
			r.log(o, rec)
		}
		m := message(r.cfg.Topic, o, rec, r.cfg.ContextHeaders)
		m.Opaque = d
		for {
			err := p.Produce(m, nil)
			if err == nil {
				break
			}
			var kerr kafka.Error
			if errors.As(err, &kerr) && kerr.Code() == kafka.ErrQueueFull {
				// The local queue drains as the broker acknowledges.
				select {
				case <-ctx.Done():
					r.forget(d)
					return r.errorf("waiting for room in the producer's queue: %w", ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			r.forget(d)
			return r.errorf("produce %s@%d: %w", rec.Partition, rec.Offset, err)
		}
	}
	var failed *delivery
	for _, d := range waits {
		if !answered(d) {
			select {
			case <-ctx.Done():
				return r.errorf("waiting for the broker to acknowledge %d dead letters: %w", len(records), ctx.Err())
			case <-d.done:
			}
		}
		if d.err != nil && failed == nil {
			failed = d
		}
	}
	if failed != nil {
		for _, d := range waits {
			if d.err != nil {
				r.forget(d)
			}
		}
		return r.errorf("delivery of %s@%d failed: %w (check errors.deadletterqueue.producer.* and the broker)", failed.key.partition, failed.key.offset, failed.err)
	}
	return nil
}

// answered reports whether the broker answered d, without waiting.
func answered(d *delivery) bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// forget drops a delivery: never produced, or failed and reported.
func (r *Reporter) forget(d *delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.letters[d.key] == d {
		delete(r.letters, d.key)
	}
}

// delivered records the broker's answer for one dead letter; the oldest
// answers beyond rememberedLetters are forgotten.
func (r *Reporter) delivered(m *kafka.Message) {
	d, ok := m.Opaque.(*delivery)
	if !ok {
		return
	}
	d.finish(m.TopicPartition.Error)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answeredKeys = append(r.answeredKeys, d.key)
	for len(r.answeredKeys) > rememberedLetters {
		k := r.answeredKeys[0]
		r.answeredKeys = r.answeredKeys[1:]
		if old := r.letters[k]; old != nil && answered(old) {
			delete(r.letters, k)
		}
	}
}

// ready returns the connected producer, starting the connect attempt or
// waiting for the one under way. An attempt that failed is reported to
// the callers waiting for it; the next call starts a new one.
func (r *Reporter) ready(ctx context.Context) (*kafka.Producer, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("dead-letter queue: reporter is closed")
	}
	if r.producer != nil {
		p := r.producer
		r.mu.Unlock()
		return p, nil
	}
	a := r.attempt
	if a == nil {
		// The attempt outlives the Report that starts it (the next Report
		// waits for it), so it keeps ctx's values but not its end.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.connectTimeout())
		a = &connectAttempt{done: make(chan struct{}), cancel: cancel}
		r.attempt = a
		r.wg.Add(1)
		go r.connect(actx, a)
	}
	r.mu.Unlock()
	select {
	case <-a.done:
	default:
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, r.errorf("connecting to Kafka at %s: %w", r.cfg.Producer[bootstrapServers], ctx.Err())
		}
	}
	if a.err != nil {
		r.mu.Lock()
		if r.attempt == a {
			r.attempt = nil
		}
		r.mu.Unlock()
		return nil, a.err
	}
	return a.p, nil
}

func (r *Reporter) connectTimeout() time.Duration {
	if r.cfg.ConnectTimeout > 0 {
		return r.cfg.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// connect creates the producer and the topic for attempt a.
func (r *Reporter) connect(ctx context.Context, a *connectAttempt) {
	defer r.wg.Done()
	defer a.cancel()
	p, err := r.newProducer()
	if err == nil {
		if err = r.createTopic(ctx, p); err != nil {
			p.Close()
			p = nil
		}
	}
	r.mu.Lock()
	if err == nil && r.closed {
		p.Close()
		p, err = nil, errors.New("dead-letter queue: reporter is closed")
	}
	if err == nil {
		r.producer = p
		r.attempt = nil
	}
	a.p, a.err = p, err
	r.mu.Unlock()
	close(a.done)
}

// newProducer creates the producer and the goroutines that read its
// events and logs.
func (r *Reporter) newProducer() (*kafka.Producer, error) {
	cm := kafka.ConfigMap{
		"client.id": "floe-dlq-" + r.cfg.Connector,
		"acks":      "all",
		"linger.ms": 5,
		// librdkafka's logs go to floe's logger, labelled, not to stderr.
		"go.logs.channel.enable": true,
	}
	for k, v := range r.cfg.Producer {
		cm[k] = v
	}
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return nil, r.errorf("create producer: %w (check errors.deadletterqueue.producer.*)", err)
	}
	r.wg.Add(1)
	go r.events(p)
	if logs := p.Logs(); logs != nil {
		r.wg.Add(1)
		go r.logs(logs)
	}
	return p, nil
}

// events reads the producer's delivery reports and errors until it is
// closed, so the producer never blocks on a full events channel.
func (r *Reporter) events(p *kafka.Producer) {
	defer r.wg.Done()
	for ev := range p.Events() {
		switch e := ev.(type) {
		case *kafka.Message:
			r.delivered(e)
		case kafka.Error:
			r.noteError(e)
			r.logger.Warn("dead-letter producer", "topic", r.cfg.Topic, "error", e.Error())
		}
	}
}

// logs forwards librdkafka's log lines.
func (r *Reporter) logs(ch chan kafka.LogEvent) {
	defer r.wg.Done()
	for ev := range ch {
		r.logger.Log(syslogLevel(ev.Level), "dead-letter producer: "+ev.Message, "topic", r.cfg.Topic, "facility", ev.Tag, "client", ev.Name)
	}
}

// syslogLevel maps librdkafka's syslog levels to hclog's.
func syslogLevel(l int) hclog.Level {
	switch {
	case l <= 3:
		return hclog.Error
	case l == 4:
		return hclog.Warn
	case l <= 6:
		return hclog.Info
	}
	return hclog.Debug
}

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

// metadataPoll bounds one metadata request while connecting, so an error
// retrying cannot cure ends the attempt early.
const metadataPoll = time.Second

// createTopic makes the dead-letter topic if it is missing; ctx bounds it.
func (r *Reporter) createTopic(ctx context.Context, p *kafka.Producer) error {
	admin, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		return r.errorf("admin client: %w", err)
	}
	defer admin.Close()
	bootstrap := r.cfg.Producer[bootstrapServers]
	// All topics: asking for one topic could auto-create it with the
	// broker's defaults instead of ours.
	var md *kafka.Metadata
	for {
		wait := metadataPoll
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, max(time.Until(d), 10*time.Millisecond))
		}
		md, err = admin.GetMetadata(nil, true, int(wait.Milliseconds()))
		if err == nil {
			break
		}
		if f := r.fatalError(); f != nil {
			return r.errorf("cannot connect to Kafka at %s: %v (check the security settings: kafka.security.protocol, kafka.sasl.*, kafka.ssl.*, or errors.deadletterqueue.producer.*)", bootstrap, f)
		}
		if ctx.Err() != nil {
			return r.errorf("cannot reach Kafka at %s within %s: %v (check errors.deadletterqueue.producer.* or the connector's kafka.* connection settings)", bootstrap, r.connectTimeout(), err)
		}
	}
	if t, ok := md.Topics[r.cfg.Topic]; ok && t.Error.Code() == kafka.ErrNoError {
		return nil
	}
	rf := r.cfg.ReplicationFactor
	if len(md.Brokers) > 0 && rf > len(md.Brokers) {
		rf = len(md.Brokers)
	}
	res, err := admin.CreateTopics(ctx, []kafka.TopicSpecification{{
		Topic: r.cfg.Topic, NumPartitions: 1, ReplicationFactor: rf,
	}})
	if err != nil {
		return r.errorf("create the topic: %w", err)
	}
	for _, tr := range res {
		if c := tr.Error.Code(); c != kafka.ErrNoError && c != kafka.ErrTopicAlreadyExists {
			return r.errorf("create the topic (replication factor %d): %w", rf, tr.Error)
		}
	}
	r.logger.Info("created dead-letter topic", "connector", r.cfg.Connector, "topic", r.cfg.Topic, "replication_factor", rf)
	return nil
}

// Close flushes and closes the producer and stops a connect attempt. ctx
// bounds the flush; records were acknowledged before Report returned, so
// nothing is lost when it expires.
func (r *Reporter) Close(ctx context.Context) {
	r.mu.Lock()
	p, a := r.producer, r.attempt
	r.producer, r.closed = nil, true
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

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }
