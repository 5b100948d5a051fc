package schemas

import (
	"fmt"
	"strings"
)

// Subject name strategies, named as in Confluent's serializers. Subject
// and RegistryConfig.SubjectStrategy also accept Confluent's Java class
// names (io.confluent.kafka.serializers.subject.TopicNameStrategy, …).
const (
	// TopicNameStrategy names the subject <topic>-value or <topic>-key. It
	// is the default.
	TopicNameStrategy = "TopicNameStrategy"
	// RecordNameStrategy names the subject after the record's full name.
	RecordNameStrategy = "RecordNameStrategy"
	// TopicRecordNameStrategy names the subject <topic>-<record full name>.
	TopicRecordNameStrategy = "TopicRecordNameStrategy"
)

const confluentStrategyPackage = "io.confluent.kafka.serializers.subject."

// normalizeStrategy maps a configured strategy to one of the constants;
// "" means TopicNameStrategy.
func normalizeStrategy(strategy string) (string, error) {
	name := strings.TrimPrefix(strings.TrimSpace(strategy), confluentStrategyPackage)
	switch name {
	case "", TopicNameStrategy:
		return TopicNameStrategy, nil
	case RecordNameStrategy, TopicRecordNameStrategy:
		return name, nil
	}
	return "", fmt.Errorf("unknown subject name strategy %q: use %s (default), %s or %s, optionally with the prefix %s",
		strategy, TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy, confluentStrategyPackage)
}

// Subject returns the Schema Registry subject for a topic's key or value
// schema under a subject name strategy ("" for TopicNameStrategy).
// TopicNameStrategy needs topic, RecordNameStrategy needs recordFullName
// (namespace.name) and TopicRecordNameStrategy needs both; isKey only
// matters for TopicNameStrategy.
func Subject(strategy, topic, recordFullName string, isKey bool) (string, error) {
	s, err := normalizeStrategy(strategy)
	if err != nil {
		return "", fmt.Errorf("schema registry subject: %w", err)
	}
	need := func(what, v string) error {
		if v == "" {
			return fmt.Errorf("schema registry subject: %s needs the %s", s, what)
		}
		return nil
	}
	switch s {
	case RecordNameStrategy:
		if err := need("record full name", recordFullName); err != nil {
			return "", err
		}
		return recordFullName, nil
	case TopicRecordNameStrategy:
		if err := need("topic", topic); err != nil {
			return "", err
		}
		if err := need("record full name", recordFullName); err != nil {
			return "", err
		}
		return topic + "-" + recordFullName, nil
	}
	if err := need("topic", topic); err != nil {
		return "", err
	}
	if isKey {
		return topic + "-key", nil
	}
	return topic + "-value", nil
}
