package compat

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/floehq/floe/sdk"
)

// Keys of floe that a translation writes.
const (
	keySource           = "source"
	keyTopics           = "topics"
	keyTopicsRegex      = "topics.regex"
	keyBootstrap        = "kafka.bootstrap.servers"
	keyGroupID          = "consumer.group.id"
	keyValueFormat      = "value.format"
	keyKeyFormat        = "key.format"
	keyRegistryPrefix   = "schema.registry."
	keySubjectStrategy  = "value.subject.name.strategy"
	keyCatalogType      = "iceberg.catalog.type"
	keyCatalogImpl      = "iceberg.catalog.catalog-impl"
	sourceKafka         = "kafka"
	workerBootstrap     = "bootstrap.servers"
	connectGroupID      = "iceberg.connect.group-id"
	keyValueConverter   = "value.converter"
	keyKeyConverter     = "key.converter"
	keyHeaderConverter  = "header.converter"
	keyCommitBranch     = "iceberg.tables.default-commit-branch"
	keyUpsert           = "iceberg.tables.upsert-mode-enabled"
	keyCDCField         = "iceberg.tables.cdc-field"
	prefixTable         = "iceberg.table."
	suffixIDColumns     = ".id-columns"
	suffixCommitBranch  = ".commit-branch"
	registryURLSuffix   = "schema.registry.url"
	apicurioURLSuffix   = "apicurio.registry.url"
	userInfoSuffix      = "basic.auth.user.info"
	credsSourceSuffix   = "basic.auth.credentials.source"
	subjectStrategyName = "value.subject.name.strategy"
)

// WorkerKeys are the worker config keys a connector inherits, as a Kafka
// Connect connector inherits its worker's: bootstrap.servers and the
// converters. [WorkerKey] says whether a key is one.
var workerKeys = []string{workerBootstrap, keyKeyConverter, keyValueConverter, keyHeaderConverter}

// WorkerKey reports whether a worker config key is one a connector
// inherits (bootstrap.servers, key.converter[.*], value.converter[.*],
// header.converter[.*]).
func WorkerKey(key string) bool {
	for _, k := range workerKeys {
		if key == k || k != workerBootstrap && strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
}

// Result is a connector config translated for floe.
type Result struct {
	// Config is what floe runs: the keys given that floe reads, plus the
	// keys derived from Kafka Connect's and the Apache Iceberg sink's. A
	// key the config sets itself is never overwritten.
	Config map[string]string
	// From maps each derived key to the key it was derived from.
	From map[string]string
	// Ignored holds the keys floe accepts and does not use, each with
	// why; they are not in Config. Sorted by key.
	Ignored []Note
	// Errors maps a key to why floe cannot run it as given.
	Errors map[string]string
}

// Note is one key floe accepts but ignores, and why.
type Note struct {
	Key string
	Why string
}

// Translate reads a connector config written for Kafka Connect and the
// Apache Iceberg sink (or floe's own: its keys pass unchanged) and returns
// what floe runs. worker holds the worker config's inherited keys
// ([WorkerKey]); the connector's own win, as in Connect.
//
// What it does:
//   - topics or topics.regex without source: the kafka source, its
//     kafka.bootstrap.servers from the worker's bootstrap.servers.
//   - key.converter, value.converter and their settings: the kafka
//     source's key.format, value.format and schema.registry.* keys.
//   - iceberg.connect.group-id: consumer.group.id.
//   - iceberg.catalog.catalog-impl without iceberg.catalog.type: the type.
//   - the Apache sink's keys floe has no use for (control topic, Hadoop,
//     Kafka client settings of the control topic, …): accepted, left
//     out, each with a note saying why; keys whose meaning floe cannot
//     honour (an upsert mode, a commit branch other than main, a JSON
//     converter): an error naming the key and what floe supports.
func Translate(config, worker map[string]string) Result {
	r := Result{Config: make(map[string]string, len(config)), From: map[string]string{}, Errors: map[string]string{}}
	derive := func(key, value, from string) {
		if _, set := config[key]; set {
			return
		}
		if _, done := r.Config[key]; done {
			return
		}
		r.Config[key] = value
		r.From[key] = from
	}
	ignore := func(key, why string) { r.Ignored = append(r.Ignored, Note{Key: key, Why: why}) }

	source := strings.TrimSpace(config[keySource])
	if source == "" {
		if _, ok := config[keyTopics]; ok {
			source = sourceKafka
			derive(keySource, source, keyTopics)
		} else if _, ok := config[keyTopicsRegex]; ok {
			source = sourceKafka
			derive(keySource, source, keyTopicsRegex)
		}
	}
	readsKafka := source == sourceKafka
	// The worker's bootstrap.servers and converters apply to connectors
	// reading Kafka, unless the connector sets its own.
	eff := maps.Clone(config)
	inherited := map[string]bool{}
	if readsKafka {
		for k, v := range worker {
			if _, own := eff[k]; WorkerKey(k) && !own && !ownsConverter(config, k) {
				eff[k], inherited[k] = v, true
			}
		}
	}
	errs := func(key, msg string) {
		if inherited[key] {
			msg += fmt.Sprintf(" (%s is set in the worker config; set it in the connector to override)", key)
		}
		r.Errors[key] = msg
	}

	for _, k := range slices.Sorted(maps.Keys(eff)) {
		v := eff[k]
		if why, ok := ignoredWhy(k); ok {
			ignore(k, why)
			continue
		}
		isConverter := false
		for _, c := range []string{keyKeyConverter, keyValueConverter, keyHeaderConverter} {
			isConverter = isConverter || k == c || strings.HasPrefix(k, c+".")
		}
		switch {
		case isConverter && !readsKafka:
			ignore(k, fmt.Sprintf("the %s source reads no Kafka records, so Kafka Connect's converters do not apply", source))
		case k == workerBootstrap:
			if readsKafka {
				derive(keyBootstrap, v, k)
			} else {
				ignore(k, fmt.Sprintf("the %s source reads no Kafka brokers", source))
			}
		case k == keyValueConverter:
			translateValueConverter(eff, v, derive, ignore, errs)
		case k == keyKeyConverter:
			translateKeyConverter(v, derive, errs)
		case k == keyHeaderConverter:
			ignore(k, "floe keeps each record's headers as they came and needs no header converter")
		case isConverter:
			// Read with their converter.
		case k == connectGroupID:
			derive(keyGroupID, v, k)
		case k == keyCatalogImpl:
			if _, set := config[keyCatalogType]; set {
				ignore(k, keyCatalogType+" names the catalog")
			} else if t, ok := catalogTypes[strings.TrimSpace(v)]; ok {
				derive(keyCatalogType, t, k)
			} else {
				errs(k, fmt.Sprintf("catalog class %q is not one floe knows: set %s to rest, sql, glue or hive instead", v, keyCatalogType))
			}
		case k == keyCommitBranch || strings.HasPrefix(k, prefixTable) && strings.HasSuffix(k, suffixCommitBranch):
			if b := strings.TrimSpace(v); b != "" && b != "main" {
				errs(k, fmt.Sprintf("floe commits to the table's main branch only; %q is not supported: remove the key or set it to main", b))
			} else {
				ignore(k, "floe commits to the main branch, which this names")
			}
		case k == keyUpsert:
			if strings.EqualFold(strings.TrimSpace(v), "true") {
				errs(k, "floe writes append-only: upsert mode is not supported; remove the key (or set it to false)")
			} else {
				ignore(k, "floe writes append-only, as this asks")
			}
		case k == keyCDCField:
			errs(k, "floe writes append-only: change data capture (a CDC field with I/U/D operations) is not supported; remove the key")
		default:
			r.Config[k] = v
		}
	}
	slices.SortFunc(r.Ignored, func(a, b Note) int { return strings.Compare(a.Key, b.Key) })
	return r
}

// ownsConverter reports whether config sets the converter that key (a
// worker's key.converter.* or value.converter.* setting) belongs to: then
// the worker's settings of that converter do not apply, as in Connect.
func ownsConverter(config map[string]string, key string) bool {
	for _, c := range []string{keyKeyConverter, keyValueConverter, keyHeaderConverter} {
		if strings.HasPrefix(key, c+".") {
			_, own := config[c]
			return own
		}
	}
	return false
}

// catalogTypes maps the Apache sink's catalog classes to floe's types.
var catalogTypes = map[string]string{
	"org.apache.iceberg.rest.RESTCatalog":     "rest",
	"org.apache.iceberg.jdbc.JdbcCatalog":     "sql",
	"org.apache.iceberg.aws.glue.GlueCatalog": "glue",
	"org.apache.iceberg.hive.HiveCatalog":     "hive",
}

// ignoredWhy says why floe ignores an Apache Iceberg sink key, if it does.
func ignoredWhy(k string) (string, bool) {
	const noControl = "floe needs no control topic: one committer per connector commits each checkpoint once every writer has flushed, with the source positions in the snapshot"
	switch {
	case k == "iceberg.control.topic", k == "iceberg.control.group-id-prefix", strings.HasPrefix(k, "iceberg.kafka."):
		return noControl, true
	case k == "iceberg.control.commit.timeout-ms":
		return "floe never commits a partial checkpoint after a timeout: a checkpoint commits once every writer flushed (commit.interval.ms sets how often)", true
	case k == "iceberg.control.commit.threads":
		return "floe commits each table of a checkpoint from its committer; there is no commit thread pool to size", true
	case k == "iceberg.hadoop-conf-dir", strings.HasPrefix(k, "iceberg.hadoop."):
		return "floe has no Hadoop configuration: the catalog and its file IO take iceberg.catalog.* settings (s3.*, gcs.*, adls.*)", true
	case k == "iceberg.tables.default-id-columns", strings.HasPrefix(k, prefixTable) && strings.HasSuffix(k, suffixIDColumns):
		return "floe writes append-only and sets no identifier fields on the tables it creates", true
	}
	return "", false
}

// Converter classes.
const (
	avroConfluent   = "io.confluent.connect.avro.AvroConverter"
	avroApicurio    = "io.apicurio.registry.utils.converter.AvroConverter"
	jsonConverter   = "org.apache.kafka.connect.json.JsonConverter"
	jsonSchema      = "io.confluent.connect.json.JsonSchemaConverter"
	protobuf        = "io.confluent.connect.protobuf.ProtobufConverter"
	stringConverter = "org.apache.kafka.connect.storage.StringConverter"
	bytesConverter  = "org.apache.kafka.connect.converters.ByteArrayConverter"
)

const supported = "floe's kafka source reads Avro values in the Confluent wire format with a Schema Registry: use " + avroConfluent + " (or " + avroApicurio + " writing Confluent's format) with value.converter.schema.registry.url"

func translateValueConverter(eff map[string]string, class string, derive func(key, value, from string), ignore func(key, why string), errs func(key, msg string)) {
	class = strings.TrimSpace(class)
	switch class {
	case avroConfluent, avroApicurio:
		derive(keyValueFormat, "avro", keyValueConverter)
	case jsonConverter, jsonSchema:
		errs(keyValueConverter, fmt.Sprintf("%s is not supported yet: %s", class, supported))
		return
	case protobuf, stringConverter, bytesConverter:
		errs(keyValueConverter, fmt.Sprintf("%s is not supported: %s", class, supported))
		return
	default:
		errs(keyValueConverter, fmt.Sprintf("unknown converter class %q: %s", class, supported))
		return
	}
	p := keyValueConverter + "."
	for _, k := range slices.Sorted(maps.Keys(eff)) {
		rest, ok := strings.CutPrefix(k, p)
		if !ok {
			continue
		}
		v := eff[k]
		switch {
		case rest == registryURLSuffix:
			derive(keyRegistryPrefix+"url", v, k)
		case rest == apicurioURLSuffix:
			if !strings.Contains(v, "/apis/ccompat/") {
				errs(k, fmt.Sprintf("floe talks to Apicurio through its Confluent-compatible API: set %sschema.registry.url to the ccompat URL (for example %s)", p, ccompatGuess(v)))
				continue
			}
			derive(keyRegistryPrefix+"url", v, k)
		case rest == userInfoSuffix:
			derive(keyRegistryPrefix+userInfoSuffix, v, k)
		case rest == credsSourceSuffix:
			switch strings.ToUpper(strings.TrimSpace(v)) {
			case "USER_INFO", "URL":
				ignore(k, "floe sends "+p+userInfoSuffix+" (or the URL's user:password) as basic auth")
			default:
				errs(k, fmt.Sprintf("%q is not supported: floe authenticates to the registry with %s%s (USER_INFO) or a user:password in the URL", v, p, userInfoSuffix))
			}
		case strings.HasPrefix(rest, "schema.registry.ssl."), rest == "schema.registry.request.timeout.ms":
			derive(keyRegistryPrefix+strings.TrimPrefix(rest, "schema.registry."), v, k)
		case rest == subjectStrategyName:
			derive(keySubjectStrategy, v, k)
		default:
			ignore(k, "a producer-side or JSON setting of the converter: floe decodes by the schema id each record carries")
		}
	}
}

func translateKeyConverter(class string, derive func(key, value, from string), errs func(key, msg string)) {
	switch strings.TrimSpace(class) {
	case stringConverter, jsonConverter:
		derive(keyKeyFormat, "string", keyKeyConverter)
	case bytesConverter:
		derive(keyKeyFormat, "bytes", keyKeyConverter)
	case avroConfluent, avroApicurio:
		derive(keyKeyFormat, "avro", keyKeyConverter)
	default:
		errs(keyKeyConverter, fmt.Sprintf("converter class %q is not supported for keys: floe keeps keys undecoded in the __key column; use %s, %s, %s or %s", class, stringConverter, bytesConverter, jsonConverter, avroConfluent))
	}
}

// ccompatGuess turns an Apicurio native API URL into its ccompat one.
func ccompatGuess(u string) string {
	if i := strings.Index(u, "/apis/"); i >= 0 {
		return u[:i] + "/apis/ccompat/v7"
	}
	return strings.TrimSuffix(u, "/") + "/apis/ccompat/v7"
}

// Fields declares the Kafka Connect and Apache Iceberg sink keys floe
// understands beyond its own, for validation, config/validate and `floe
// plugins`: the host's spec includes them. Their documentation says what
// floe makes of each.
func Fields(group string) []*sdk.Field {
	f := func(field *sdk.Field) *sdk.Field { return field.InGroup(group).Rank(sdk.Low) }
	return []*sdk.Field{
		f(sdk.String(keyValueConverter).Describe("Kafka Connect's value converter. " + avroConfluent + " and " + avroApicurio + " set value.format=avro; their schema.registry.url, basic.auth.user.info, schema.registry.ssl.* and value.subject.name.strategy settings become the kafka source's. Other converters are refused, naming what is supported. Inherited from the worker config when the connector sets none.")),
		f(sdk.Prefix(keyValueConverter + ".").Describe("Settings of value.converter (value.converter.schema.registry.url, …).")),
		f(sdk.Password(keyValueConverter + "." + userInfoSuffix).Describe("The registry's user:password, for value.converter: becomes schema.registry.basic.auth.user.info.")),
		f(sdk.String(keyKeyConverter).Describe("Kafka Connect's key converter: StringConverter and JsonConverter set key.format=string, ByteArrayConverter bytes, AvroConverter avro. floe keeps keys undecoded in __key.")),
		f(sdk.Prefix(keyKeyConverter + ".").Describe("Settings of key.converter; floe does not decode keys and ignores them (logged).")),
		f(sdk.Password(keyKeyConverter + "." + userInfoSuffix).Describe("The registry's user:password, for key.converter (ignored: keys are not decoded).")),
		f(sdk.String(keyHeaderConverter).Describe("Kafka Connect's header converter; ignored (logged): floe keeps headers as they came.")),
		f(sdk.Prefix(keyHeaderConverter + ".").Describe("Settings of header.converter; ignored (logged).")),
		f(sdk.String(workerBootstrap).Describe("Kafka brokers, as Kafka Connect's worker config names them: becomes kafka.bootstrap.servers for a connector reading Kafka. Inherited from the worker config when the connector sets none.")),
		f(sdk.String(keyCatalogImpl).Describe("The Apache Iceberg sink's catalog class: without iceberg.catalog.type, RESTCatalog, JdbcCatalog, GlueCatalog and HiveCatalog set it (rest, sql, glue, hive).")),
		f(sdk.String(connectGroupID).Describe("The Apache Iceberg sink's consumer group; becomes consumer.group.id.")),
		f(sdk.String("iceberg.control.topic").Describe("Ignored (logged): floe needs no control topic.")),
		f(sdk.String("iceberg.control.group-id-prefix").Describe("Ignored (logged): floe needs no control topic.")),
		f(sdk.String("iceberg.control.commit.timeout-ms").Describe("Ignored (logged): a checkpoint commits once every writer flushed, never partially after a timeout.")),
		f(sdk.String("iceberg.control.commit.threads").Describe("Ignored (logged): floe has no commit thread pool.")),
		f(sdk.Prefix("iceberg.kafka.").Describe("The Apache sink's Kafka client settings for its control topic; ignored (logged). The kafka source reads with kafka.* settings.")),
		f(sdk.String("iceberg.hadoop-conf-dir").Describe("Ignored (logged): floe has no Hadoop configuration; use iceberg.catalog.* settings.")),
		f(sdk.Prefix("iceberg.hadoop.").Describe("Ignored (logged): floe has no Hadoop configuration; use iceberg.catalog.* settings.")),
		f(sdk.String("iceberg.tables.default-id-columns").Describe("Ignored (logged): floe writes append-only and sets no identifier fields. So is iceberg.table.<table>.id-columns.")),
		f(sdk.String(keyCommitBranch).Describe("main is accepted (floe commits to main); any other branch is refused. So is iceberg.table.<table>.commit-branch.")),
		f(sdk.String(keyUpsert).Describe("false is accepted; true is refused: floe writes append-only.")),
		f(sdk.String(keyCDCField).Describe("Refused: floe writes append-only, with no change data capture.")),
	}
}
