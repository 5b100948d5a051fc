package compat

import (
	"maps"
	"strings"
	"testing"
)

// The Apache Iceberg sink's docs' single-table example, with a
// Connect-style converter block in the connector and the brokers in the
// worker config.
func TestTranslateApacheSinkConfig(t *testing.T) {
	config := map[string]string{
		"connector.class":                     "org.apache.iceberg.connect.IcebergSinkConnector",
		"tasks.max":                           "2",
		"topics":                              "events",
		"iceberg.tables":                      "default.events",
		"iceberg.catalog.type":                "rest",
		"iceberg.catalog.uri":                 "https://localhost",
		"iceberg.catalog.credential":          "<credential>",
		"iceberg.catalog.warehouse":           "<warehouse name>",
		"key.converter":                       "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                     "io.confluent.connect.avro.AvroConverter",
		"value.converter.schema.registry.url": "http://registry:8081",
		"value.converter.basic.auth.credentials.source": "USER_INFO",
		"value.converter.basic.auth.user.info":          "u:p",
		"iceberg.control.topic":                         "control-iceberg",
		"iceberg.control.commit.timeout-ms":             "30000",
		"iceberg.kafka.auto.offset.reset":               "earliest",
		"iceberg.table.default.events.id-columns":       "id",
		"iceberg.connect.group-id":                      "cg-events",
	}
	// The worker's converter setting is not inherited: the connector has its own converter.
	worker := map[string]string{"bootstrap.servers": "broker:9092", "value.converter.schemas.enable": "false", "listeners": "http://:8083"}
	r := Translate(config, worker)
	if len(r.Errors) != 0 {
		t.Fatalf("errors: %v", r.Errors)
	}
	want := map[string]string{
		"connector.class":                      "org.apache.iceberg.connect.IcebergSinkConnector",
		"tasks.max":                            "2",
		"topics":                               "events",
		"iceberg.tables":                       "default.events",
		"iceberg.catalog.type":                 "rest",
		"iceberg.catalog.uri":                  "https://localhost",
		"iceberg.catalog.credential":           "<credential>",
		"iceberg.catalog.warehouse":            "<warehouse name>",
		"source":                               "kafka",
		"kafka.bootstrap.servers":              "broker:9092",
		"key.format":                           "string",
		"value.format":                         "avro",
		"schema.registry.url":                  "http://registry:8081",
		"schema.registry.basic.auth.user.info": "u:p",
		"consumer.group.id":                    "cg-events",
	}
	if !maps.Equal(r.Config, want) {
		t.Errorf("config:\n got %v\nwant %v", r.Config, want)
	}
	if r.From["kafka.bootstrap.servers"] != "bootstrap.servers" || r.From["schema.registry.url"] != "value.converter.schema.registry.url" || r.From["source"] != "topics" {
		t.Errorf("from = %v", r.From)
	}
	var ignored []string
	for _, n := range r.Ignored {
		if n.Why == "" {
			t.Errorf("ignored %s without a reason", n.Key)
		}
		ignored = append(ignored, n.Key)
	}
	wantIgnored := "iceberg.control.commit.timeout-ms iceberg.control.topic iceberg.kafka.auto.offset.reset iceberg.table.default.events.id-columns value.converter.basic.auth.credentials.source"
	if got := strings.Join(ignored, " "); got != wantIgnored {
		t.Errorf("ignored:\n got %s\nwant %s", got, wantIgnored)
	}
}

func TestTranslateKeepsFloeKeys(t *testing.T) {
	config := map[string]string{"connector.class": "iceberg", "source": "datagen", "iceberg.tables": "a.b"}
	r := Translate(config, map[string]string{"bootstrap.servers": "b:9092", "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
	if !maps.Equal(r.Config, config) || len(r.Errors) != 0 || len(r.Ignored) != 0 || len(r.From) != 0 {
		t.Errorf("a datagen connector picked up the worker's Kafka keys: %+v", r)
	}

	// The connector's own floe keys win over derived ones, and its own
	// converter over the worker's settings of another.
	config = map[string]string{"topics": "t", "kafka.bootstrap.servers": "own:9092", "schema.registry.url": "http://own",
		"value.converter": "io.confluent.connect.avro.AvroConverter", "value.converter.schema.registry.url": "http://derived"}
	r = Translate(config, map[string]string{"bootstrap.servers": "worker:9092", "value.converter.schema.registry.url": "http://worker"})
	if r.Config["kafka.bootstrap.servers"] != "own:9092" || r.Config["schema.registry.url"] != "http://own" || len(r.Errors) != 0 {
		t.Errorf("own keys lost: %+v", r)
	}
}

func TestTranslateInheritsWorkerConverter(t *testing.T) {
	worker := map[string]string{"value.converter": "io.confluent.connect.avro.AvroConverter", "value.converter.schema.registry.url": "http://w"}
	r := Translate(map[string]string{"topics.regex": "ev-.*"}, worker)
	if r.Config["source"] != "kafka" || r.Config["value.format"] != "avro" || r.Config["schema.registry.url"] != "http://w" || r.From["source"] != "topics.regex" {
		t.Errorf("inherited converter: %+v", r)
	}
	// A connector's own converter replaces the worker's and its settings.
	r = Translate(map[string]string{"topics": "t", "value.converter": "io.confluent.connect.avro.AvroConverter", "value.converter.schema.registry.url": "http://c"}, worker)
	if r.Config["schema.registry.url"] != "http://c" {
		t.Errorf("connector's converter: %+v", r)
	}
}

func TestTranslateErrors(t *testing.T) {
	for _, tc := range []struct {
		config map[string]string
		worker map[string]string
		key    string
		says   string
	}{
		{map[string]string{"topics": "t", "value.converter": "org.apache.kafka.connect.json.JsonConverter"}, nil, "value.converter", "Avro"},
		{map[string]string{"topics": "t"}, map[string]string{"value.converter": "org.apache.kafka.connect.json.JsonConverter"}, "value.converter", "worker config"},
		{map[string]string{"topics": "t", "value.converter": "com.example.Mine"}, nil, "value.converter", "unknown converter"},
		{map[string]string{"topics": "t", "key.converter": "io.confluent.connect.protobuf.ProtobufConverter"}, nil, "key.converter", "not supported for keys"},
		{map[string]string{"topics": "t", "value.converter": "io.apicurio.registry.utils.converter.AvroConverter", "value.converter.apicurio.registry.url": "http://a:8080/apis/registry/v2"}, nil,
			"value.converter.apicurio.registry.url", "http://a:8080/apis/ccompat/v7"},
		{map[string]string{"iceberg.tables.default-commit-branch": "dev"}, nil, "iceberg.tables.default-commit-branch", "main branch only"},
		{map[string]string{"iceberg.table.a.b.commit-branch": "dev"}, nil, "iceberg.table.a.b.commit-branch", "main branch only"},
		{map[string]string{"iceberg.tables.upsert-mode-enabled": "true"}, nil, "iceberg.tables.upsert-mode-enabled", "append-only"},
		{map[string]string{"iceberg.tables.cdc-field": "op"}, nil, "iceberg.tables.cdc-field", "append-only"},
		{map[string]string{"iceberg.catalog.catalog-impl": "com.example.Cat"}, nil, "iceberg.catalog.catalog-impl", "iceberg.catalog.type"},
	} {
		r := Translate(tc.config, tc.worker)
		if msg := r.Errors[tc.key]; !strings.Contains(msg, tc.says) {
			t.Errorf("Translate(%v, worker %v): error on %s = %q, want it to say %q (all: %v)", tc.config, tc.worker, tc.key, msg, tc.says, r.Errors)
		}
	}
}

func TestTranslateCatalogImpl(t *testing.T) {
	r := Translate(map[string]string{"iceberg.catalog.catalog-impl": "org.apache.iceberg.rest.RESTCatalog"}, nil)
	if r.Config["iceberg.catalog.type"] != "rest" || r.Config["iceberg.catalog.catalog-impl"] != "" {
		t.Errorf("catalog-impl: %+v", r)
	}
	r = Translate(map[string]string{"iceberg.tables.default-commit-branch": "main", "iceberg.tables.upsert-mode-enabled": "false"}, nil)
	if len(r.Errors) != 0 || len(r.Ignored) != 2 || len(r.Config) != 0 {
		t.Errorf("main branch and upsert off should be accepted and left out: %+v", r)
	}
}

func TestFieldsCoverEveryIgnoredKey(t *testing.T) {
	declared := func(key string) bool {
		for _, f := range Fields("g") {
			if f.Name == key || f.Prefix && strings.HasPrefix(key, f.Name) {
				return true
			}
		}
		return strings.HasPrefix(key, "iceberg.table.") // the sink's prefix
	}
	for _, key := range []string{"iceberg.control.topic", "iceberg.control.group-id-prefix", "iceberg.control.commit.timeout-ms",
		"iceberg.control.commit.threads", "iceberg.hadoop.fs.s3a.endpoint", "iceberg.hadoop-conf-dir", "iceberg.kafka.bootstrap.servers",
		"iceberg.tables.default-id-columns",
		"iceberg.tables.default-commit-branch", "value.converter",
		"value.converter.schema.registry.url", "key.converter", "header.converter", "bootstrap.servers", "iceberg.connect.group-id",
		"iceberg.catalog.catalog-impl", "iceberg.tables.upsert-mode-enabled", "iceberg.tables.cdc-field"} {
		if !declared(key) {
			t.Errorf("%s is not declared by Fields: config/validate would call it unknown", key)
		}
	}
}
