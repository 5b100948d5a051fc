package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// DescriberEnv set to "1" makes the floe binary serve group descriptions
// on stdin and stdout instead of running a command (ServeDescriber); the
// worker starts it so.
//
// librdkafka aborts the whole process when a group-coordinator admin
// request fails to be sent because the coordinator's connection dropped
// ("rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'
// failed", confluentinc/librdkafka#4605, fix #5397 not released). The
// leader describes the cluster's group on every placement, so a Kafka
// node killed under a 3-node cluster took the leader down with it
// (TestDistributedBrokerKill). The describe call therefore runs in a
// child process: an abort ends the child, the call fails and is asked
// again, and the worker goes on.
const DescriberEnv = "FLOE_GROUP_DESCRIBER"

// describeRequest is one line the worker writes to the describer.
type describeRequest struct {
	Group     string `json:"group"`
	TimeoutMs int    `json:"timeout_ms"`
}

// describeAnswer is the describer's line for one request.
type describeAnswer struct {
	// Failed is the error of the call itself (no description).
	Failed     string         `json:"failed,omitempty"`
	FailedCode int            `json:"failed_code,omitempty"`
	Code       int            `json:"code"` // the group's error code
	Message    string         `json:"message,omitempty"`
	State      int            `json:"state"`
	Members    []memberAnswer `json:"members"`
}

type memberAnswer struct {
	ClientID   string      `json:"client_id"`
	InstanceID string      `json:"instance_id"`
	ConsumerID string      `json:"consumer_id"`
	Host       string      `json:"host"`
	Partitions []partition `json:"partitions"`
}

type partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// ServeDescriber is the describer process: it reads the client config
// (one JSON line of librdkafka settings), then answers each request line
// with DescribeConsumerGroups, until stdin ends. It returns the exit code.
func ServeDescriber(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "group describer: read the client config: %v\n", err)
		return 2
	}
	var conf map[string]string
	if err := json.Unmarshal(line, &conf); err != nil {
		_, _ = fmt.Fprintf(stderr, "group describer: client config: %v\n", err)
		return 2
	}
	cm := kafka.ConfigMap{}
	for k, v := range conf {
		cm[k] = v
	}
	admin, err := kafka.NewAdminClient(&cm)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "group describer: %v\n", err)
		return 2
	}
	defer admin.Close()
	enc := json.NewEncoder(stdout)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0 // the worker closed stdin
		}
		var req describeRequest
		if err := json.Unmarshal(line, &req); err != nil {
			_, _ = fmt.Fprintf(stderr, "group describer: request: %v\n", err)
			return 2
		}
		if err := enc.Encode(describeOnce(admin, req)); err != nil {
			return 0
		}
	}
}

// describeOnce answers one request.
func describeOnce(admin *kafka.AdminClient, req describeRequest) describeAnswer {
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := admin.DescribeConsumerGroups(ctx, []string{req.Group}, kafka.SetAdminRequestTimeout(timeout))
	if err != nil {
		a := describeAnswer{Failed: err.Error()}
		var ke kafka.Error
		if errors.As(err, &ke) {
			a.FailedCode = int(ke.Code())
		}
		return a
	}
	if len(res.ConsumerGroupDescriptions) != 1 {
		return describeAnswer{Failed: fmt.Sprintf("%d answers", len(res.ConsumerGroupDescriptions))}
	}
	d := res.ConsumerGroupDescriptions[0]
	a := describeAnswer{Code: int(d.Error.Code()), Message: d.Error.String(), State: int(d.State)}
	for _, m := range d.Members {
		ma := memberAnswer{ClientID: m.ClientID, InstanceID: m.GroupInstanceID, ConsumerID: m.ConsumerID, Host: m.Host}
		for _, tp := range m.Assignment.TopicPartitions {
			topic := ""
			if tp.Topic != nil {
				topic = *tp.Topic
			}
			ma.Partitions = append(ma.Partitions, partition{Topic: topic, Partition: tp.Partition})
		}
		a.Members = append(a.Members, ma)
	}
	return a
}

// describer runs the describer process for one worker and asks it, one
// request at a time; a process that died or did not answer in time is
// replaced at the next request.
type describer struct {
	conf map[string]string
	log  *slog.Logger

	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	errs *tailWriter
}

func newDescriber(conf kafka.ConfigMap, log *slog.Logger) *describer {
	c := make(map[string]string, len(conf))
	for k, v := range conf {
		c[k] = fmt.Sprint(v)
	}
	return &describer{conf: c, log: log}
}

// start starts the process; d.mu is held.
func (d *describer) start() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start the group describer: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), DescriberEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	d.errs = &tailWriter{}
	cmd.Stderr = d.errs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the group describer (%s): %w", exe, err)
	}
	conf, _ := json.Marshal(d.conf)
	if _, err := in.Write(append(conf, '\n')); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("start the group describer: %w", err)
	}
	d.cmd, d.in, d.out = cmd, in, bufio.NewReader(out)
	return nil
}

// stop ends the process; d.mu is held.
func (d *describer) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.in.Close()
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	d.cmd = nil
}

// Close ends the describer process.
func (d *describer) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stop()
}

// describe describes group within timeout (and ctx).
func (d *describer) describe(ctx context.Context, group string, timeout time.Duration) (kafka.ConsumerGroupDescription, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		if err := d.start(); err != nil {
			return kafka.ConsumerGroupDescription{}, err
		}
	}
	req, _ := json.Marshal(describeRequest{Group: group, TimeoutMs: int(timeout.Milliseconds())})
	if _, err := d.in.Write(append(req, '\n')); err != nil {
		return kafka.ConsumerGroupDescription{}, d.died(err)
	}
	type read struct {
		line []byte
		err  error
	}
	got := make(chan read, 1)
	out := d.out
	go func() {
		line, err := out.ReadBytes('\n')
		got <- read{line, err}
	}()
	// The describer bounds the call by timeout; a little more for the
	// process itself.
	wait := time.NewTimer(timeout + 2*time.Second)
	defer wait.Stop()
	var r read
	select {
	case r = <-got:
	case <-ctx.Done():
		d.stop()
		return kafka.ConsumerGroupDescription{}, ctx.Err()
	case <-wait.C:
		d.stop()
		return kafka.ConsumerGroupDescription{}, kafka.NewError(kafka.ErrTimedOut, "the group describer did not answer in time", false)
	}
	if r.err != nil {
		return kafka.ConsumerGroupDescription{}, d.died(r.err)
	}
	var a describeAnswer
	if err := json.Unmarshal(r.line, &a); err != nil {
		d.stop()
		return kafka.ConsumerGroupDescription{}, fmt.Errorf("the group describer's answer: %w", err)
	}
	if a.Failed != "" {
		if a.FailedCode != 0 {
			return kafka.ConsumerGroupDescription{}, kafka.NewError(kafka.ErrorCode(a.FailedCode), a.Failed, false)
		}
		return kafka.ConsumerGroupDescription{}, errors.New(a.Failed)
	}
	desc := kafka.ConsumerGroupDescription{GroupID: group, Error: kafka.NewError(kafka.ErrorCode(a.Code), a.Message, false),
		State: kafka.ConsumerGroupState(a.State)}
	for _, m := range a.Members {
		md := kafka.MemberDescription{ClientID: m.ClientID, GroupInstanceID: m.InstanceID, ConsumerID: m.ConsumerID, Host: m.Host}
		for _, p := range m.Partitions {
			topic := p.Topic
			md.Assignment.TopicPartitions = append(md.Assignment.TopicPartitions, kafka.TopicPartition{Topic: &topic, Partition: p.Partition})
		}
		desc.Members = append(desc.Members, md)
	}
	return desc, nil
}

// died handles a describer that stopped answering: the next request
// starts a new one. The error says what it last wrote (librdkafka's
// abort message), and that the call is asked again; an abort is logged.
func (d *describer) died(err error) error {
	tail := d.errs.String()
	d.stop()
	d.log.Warn("the group describer process ended; a new one answers the next request", "error", err, "its_last_output", tail)
	return kafka.NewError(kafka.ErrTimedOut, fmt.Sprintf("the group describer process ended (%v): %s", err, tail), false)
}

// tailWriter keeps the last bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if n := len(w.buf); n > 2000 {
		w.buf = w.buf[n-2000:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(string(w.buf))
}
