package dlq

import (
	"context"
	"errors"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
)

// connectAttempt is one try at creating the producer and the topic.
type connectAttempt struct {
	done   chan struct{} // closed when p or err is set
	cancel context.CancelFunc
	p      *kafka.Producer
	err    error
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
	for k, v := range kclient.ProducerChannels {
		cm[k] = v
	}
	for k, v := range r.cfg.Producer {
		cm[k] = v
	}
	r.forgetErrors()
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
			if e.IsFatal() {
				r.retire(p)
				r.logger.Error("dead-letter producer hit a fatal error; the next dead letter connects a new producer", "topic", r.cfg.Topic, "error", e.Error())
				continue
			}
			r.logger.Warn("dead-letter producer", "topic", r.cfg.Topic, "error", e.Error())
		}
	}
}

// retire takes p out of use after a fatal error: librdkafka fails
// everything given to it from then on, and a task restarted in place
// keeps this reporter, so keeping p would fail every restart too. The next
// Report connects a new producer. p is closed with the reporter, not now:
// a Report may still be producing on it, and closing a producer under a
// call is unsafe. Fatal errors are rare (an idempotent producer's broken
// sequence), so few pile up.
func (r *Reporter) retire(p *kafka.Producer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.producer == p {
		r.producer = nil
		r.retired = append(r.retired, p)
	}
}

// logs forwards librdkafka's log lines.
func (r *Reporter) logs(ch chan kafka.LogEvent) {
	defer r.wg.Done()
	for ev := range ch {
		kclient.LogAt(r.logger, ev.Level, "dead-letter producer: "+ev.Message, "topic", r.cfg.Topic, "facility", ev.Tag, "client", ev.Name)
	}
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
		if f := r.stuck(); f != nil {
			return r.settle(r.errorf("cannot connect to Kafka at %s: %w (check the security settings: kafka.security.protocol, kafka.sasl.*, kafka.ssl.*, or errors.deadletterqueue.producer.*)", bootstrap, f), f)
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
		return r.settle(r.errorf("create the topic: %w", err), err)
	}
	for _, tr := range res {
		if c := tr.Error.Code(); c != kafka.ErrNoError && c != kafka.ErrTopicAlreadyExists {
			return r.settle(r.errorf("create the topic (replication factor %d): %w", rf, tr.Error), tr.Error)
		}
	}
	r.logger.Info("created dead-letter topic", "connector", r.cfg.Connector, "topic", r.cfg.Topic, "replication_factor", rf)
	return nil
}
