package dlq

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/sdk"
)

// Kafka Connect's dead-letter context header names.
const (
	HeaderTopic            = "__connect.errors.topic"
	HeaderPartition        = "__connect.errors.partition"
	HeaderOffset           = "__connect.errors.offset"
	HeaderConnectorName    = "__connect.errors.connector.name"
	HeaderTaskID           = "__connect.errors.task.id"
	HeaderStage            = "__connect.errors.stage"
	HeaderClassName        = "__connect.errors.class.name"
	HeaderExceptionClass   = "__connect.errors.exception.class.name"
	HeaderExceptionMessage = "__connect.errors.exception.message"
	HeaderStacktrace       = "__connect.errors.exception.stacktrace"
)

// Exception class names put in HeaderExceptionClass.
const (
	dataException    = "org.apache.kafka.connect.errors.DataException"
	connectException = "org.apache.kafka.connect.errors.ConnectException"
)

// Origin says where a dead letter comes from, for the context headers.
type Origin struct {
	Connector string
	Task      int
	// Component is the plugin component that failed ("kafka", "iceberg").
	Component string
}

// ContextHeaders returns Connect's __connect.errors.* headers for one
// record, in Connect's order.
func ContextHeaders(o Origin, r sdk.DeadLetter) []kafka.Header {
	topic, partition, isKafka := SplitPartition(r.Partition)
	h := []kafka.Header{{Key: HeaderTopic, Value: []byte(topic)}}
	if isKafka {
		h = append(h, kafka.Header{Key: HeaderPartition, Value: []byte(strconv.Itoa(int(partition)))})
	}
	stage := strings.ToUpper(r.Stage)
	if stage == "" {
		stage = "UNKNOWN"
	}
	class := connectException
	switch r.Stage {
	case "deserialize", "convert", "schema":
		class = dataException
	}
	h = append(h,
		kafka.Header{Key: HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
		kafka.Header{Key: HeaderConnectorName, Value: []byte(o.Connector)},
		kafka.Header{Key: HeaderTaskID, Value: []byte(strconv.Itoa(o.Task))},
		kafka.Header{Key: HeaderStage, Value: []byte(stage)},
		kafka.Header{Key: HeaderClassName, Value: []byte(o.Component)},
		kafka.Header{Key: HeaderExceptionClass, Value: []byte(class)},
		kafka.Header{Key: HeaderExceptionMessage, Value: []byte(r.Reason)},
		kafka.Header{Key: HeaderStacktrace, Value: []byte(class + ": " + r.Reason)},
	)
	return h
}

// message builds the dead-letter message for one record: its key, value
// and own headers (as the record held them; the older map form sorted by
// name, for stable output), then the context headers when enabled.
func message(topic string, o Origin, r sdk.DeadLetter, withContext bool) *kafka.Message {
	m := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
		Key:            r.Key,
		Value:          r.Value,
	}
	if r.TimestampMs > 0 {
		m.Timestamp = msTime(r.TimestampMs)
		m.TimestampType = kafka.TimestampCreateTime
	}
	if len(r.HeaderList) > 0 {
		m.Headers = make([]kafka.Header, len(r.HeaderList))
		for i, h := range r.HeaderList {
			m.Headers[i] = kafka.Header{Key: h.Key, Value: h.Value}
		}
	} else {
		keys := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			m.Headers = append(m.Headers, kafka.Header{Key: k, Value: r.Headers[k]})
		}
	}
	if withContext {
		m.Headers = append(m.Headers, ContextHeaders(o, r)...)
	}
	return m
}

// SplitPartition reads a Kafka-style partition name "topic/3". ok is false
// for other names, and topic is then the whole name.
func SplitPartition(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 || i == len(name)-1 {
		return name, 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 {
		return name, 0, false
	}
	return name[:i], int32(n), true
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }
