package iceberg

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/lake/partspec"
	"github.com/floehq/floe/sdk"
)

// Config keys. Where the Apache Iceberg Kafka Connect sink has a key with
// the same meaning, floe uses its name.
const (
	keyTables = "iceberg.tables"
	// The catalog keys are lake's, shared with the maintenance plugin and
	// floe's table commands.
	keyCatalogType    = lake.KeyCatalogType
	keyCatalogURI     = lake.KeyCatalogURI
	keyWarehouse      = lake.KeyWarehouse
	keyCatalogName    = lake.KeyCatalogName
	keyCatalogNameAlt = lake.KeyCatalogNameAlt
	prefixCatalog     = lake.PrefixCatalog
	keyJDBCPassword   = lake.KeyJDBCPassword

	keyAutoCreate      = "iceberg.tables.auto-create-enabled"
	keyEvolve          = "iceberg.tables.evolve-schema-enabled"
	keyDefaultPartBy   = "iceberg.tables.default-partition-by"
	prefixTable        = "iceberg.table."
	suffixPartitionBy  = ".partition-by"
	suffixRouteRegex   = ".route-regex"
	prefixCreateProps  = "iceberg.tables.auto-create-props."
	keyTargetFileSize  = "iceberg.tables.target-file-size-bytes"
	keyRouteField      = "iceberg.tables.route-field"
	keyDynamic         = "iceberg.tables.dynamic-enabled"
	keySourceMetadata  = "iceberg.tables.source-metadata-enabled"
	keyUnrouted        = "iceberg.tables.unrouted"
	keyUnroutedLog     = "iceberg.tables.unrouted.log"
	keyForceOptional   = "iceberg.tables.schema-force-optional"
	keyCaseInsensitive = "iceberg.tables.schema-case-insensitive"
	keyRecordKey       = "iceberg.tables.record-key-enabled"
	keyRecordHeaders   = "iceberg.tables.record-headers-enabled"
	prefixWriteProps   = "iceberg.tables.write-props."
	keyRetryAttempts   = "iceberg.commit.retry.max-attempts"
	keyRetryBackoff    = "iceberg.commit.retry.initial-backoff-ms"
	keyRetryMaxBackoff = "iceberg.commit.retry.max-backoff-ms"
	// keyRetryTransientTimeout bounds a commit's retries while the catalog
	// or the object store is unavailable (unavailable.go).
	keyRetryTransientTimeout = "iceberg.commit.retry.transient-timeout-ms"
	// keyRequestTimeout bounds each catalog request (fileio.go).
	keyRequestTimeout = "iceberg.commit.request-timeout-ms"

	// keyDataDir is injected by the host into every plugin config: the
	// worker's data directory, home of the embedded catalog.
	keyDataDir = lake.KeyDataDir
)

const defaultTargetFileSize = 128 << 20

// Values of iceberg.tables.unrouted.
const (
	unroutedSkip   = "skip"
	unroutedReject = "reject"
)

// defaultTableProps are set on tables the sink creates; the user's
// iceberg.tables.auto-create-props.* override them. Manifest merging keeps
// commit latency flat as history grows (see bench_test.go); metadata
// retention bounds the metadata.json files a long-running connector leaves.
var defaultTableProps = map[string]string{
	"format-version":                             "2",
	"write.parquet.compression-codec":            "zstd",
	"commit.manifest-merge.enabled":              "true",
	"write.metadata.delete-after-commit.enabled": "true",
	"write.metadata.previous-versions-max":       "50",
}

// Spec declares the sink's config keys.
func Spec() sdk.Spec {
	const (
		gTables  = "Tables"
		gCatalog = "Catalog"
		gCommit  = "Commit"
	)
	fields := []*sdk.Field{
		sdk.List(keyTables).
			Describe("Tables to write, as namespace.table, comma separated. Without a route field every record goes to every table. Required unless " + keyDynamic + " is true.").
			WithExample("sales.orders,sales.refunds").InGroup(gTables).Rank(sdk.High).
			Check(checkTableList),
	}
	fields = append(fields, lake.CatalogFields(gCatalog)...)
	fields = append(fields,
		sdk.Bool(keyAutoCreate).
			Describe("Create missing tables from the first schema seen, with floe's source metadata columns and the configured partition spec.").
			Default("true").InGroup(gTables),
		sdk.Bool(keyEvolve).
			Describe("Evolve table schemas automatically for new schemas: add optional columns, widen int→long and float→double, make required columns optional. Other changes reject the schema.").
			Default("true").InGroup(gTables),
		sdk.String(keyDefaultPartBy).
			Describe("Partition spec of created tables, comma separated: "+partspec.Help+".").
			WithExample("day(ts), bucket(16, id)").InGroup(gTables).
			Check(func(v string) error { _, err := partspec.Parse(v); return err }),
		sdk.Prefix(prefixTable).
			Describe("Per-table settings: iceberg.table.<namespace.table>.partition-by (overrides the default partition spec) and iceberg.table.<namespace.table>.route-regex (routes records whose route field fully matches the regex to that table).").
			WithExample("iceberg.table.sales.orders.route-regex=order.*").InGroup(gTables),
		sdk.Prefix(prefixCreateProps).
			Describe("Table properties of created tables, without the prefix. floe sets format-version=2, write.parquet.compression-codec=zstd, commit.manifest-merge.enabled=true, write.metadata.delete-after-commit.enabled=true and write.metadata.previous-versions-max=50 unless overridden.").
			WithExample("iceberg.tables.auto-create-props.write.parquet.compression-codec=snappy").InGroup(gTables),
		sdk.Long(keyTargetFileSize).
			Describe("Size at which a writer rolls to a new data file, in bytes.").
			Default(strconv.Itoa(defaultTargetFileSize)).Min(1<<20).InGroup(gTables),
		sdk.String(keyRouteField).
			Describe("Record field whose value routes each record: matched against each table's route-regex, or, with "+keyDynamic+", used as the table name. Nested fields use dots (a.b).").
			WithExample("type").InGroup(gTables),
		sdk.Bool(keyDynamic).
			Describe("Route each record to the table named by its route field (namespace.table, lower-cased), creating it when auto-create is on.").
			Default("false").InGroup(gTables),
		sdk.String(keyUnrouted).
			Describe("What happens to a record that reaches no table (its route field is null, matches no route-regex, or with dynamic routing names no namespace.table): skip drops it, as the Apache Iceberg sink does, counting it in floe_records_skipped_total and the status (and in the log at each checkpoint, see "+keyUnroutedLog+"); reject makes it a bad record (the dead-letter queue, or a failed task, as errors.tolerance says).").
			Default(unroutedSkip).OneOf(unroutedSkip, unroutedReject).InGroup(gTables),
		sdk.Bool(keyUnroutedLog).
			Describe("With "+keyUnrouted+"=skip, log at each checkpoint how many records were skipped for reaching no table, with the route field and an example value. The count always reaches floe_records_skipped_total and the connector status's floe.skipped; turn the log off when the metric is watched and the line is noise.").
			Default("true").InGroup(gTables),
		sdk.Bool(keyForceOptional).
			Describe("Create every column optional, nested fields included, and add every new column optional, whatever the record schema's nullability says, as the Apache Iceberg sink's key does. Off: columns follow the record schema, and evolution makes a column optional when a later schema does.").
			Default("false").InGroup(gTables),
		sdk.Bool(keyCaseInsensitive).
			Describe("Match record fields to table columns by name ignoring case, nested fields included, as the Apache Iceberg sink's key does: field ID writes to column id, and schema evolution adds no column ID beside it. A field with no such column is added with its own name. Off: names match exactly.").
			Default("false").InGroup(gTables),
		sdk.Prefix(prefixWriteProps).
			Describe("Writer properties, without the prefix, laid over each table's properties when floe writes its data files, as the Apache Iceberg sink's writers take them; the table's stored properties are not changed. Honoured: write.parquet.compression-codec and -level, write.parquet.row-group-limit, page-size-bytes, page-row-limit, dict-size-bytes, write.metadata.metrics.*, and write.target-file-size-bytes (unless "+keyTargetFileSize+" is set). write.format.default must be parquet. floe writes 256 KiB data pages unless the table or these set write.parquet.page-size-bytes (Iceberg's default 1 MiB pages cost the sink 12-20 % more CPU per record).").
			WithExample("iceberg.tables.write-props.write.parquet.compression-codec=snappy").InGroup(gTables),
		sdk.Bool(keySourceMetadata).
			Describe("Add the columns _source_partition (string), _source_offset (long) and _source_timestamp (timestamptz) to every row: where it came from.").
			Default("true").InGroup(gTables),
		sdk.Bool(keyRecordKey).
			Describe("Add the column __key (binary): the record key's bytes as the source gives them (for Kafka: as key.format says), an empty key kept apart from a null one.").
			Default("false").InGroup(gTables),
		sdk.Bool(keyRecordHeaders).
			Describe("Add the column __headers, list<struct<key string, value binary>>: the record headers in order, a repeated key kept as often as it came and a null value as null; null for a record without headers. A list, not a map, because Kafka headers repeat keys.").
			Default("false").InGroup(gTables),

		sdk.Int(keyRetryAttempts).
			Describe("Attempts per table commit on an optimistic-concurrency conflict (reload, re-check fencing, retry) before the checkpoint's commit fails.").
			Default("10").Min(1).InGroup(gCommit),
		sdk.Duration(keyRetryBackoff).
			Describe("Wait before the second commit attempt; doubled per attempt (milliseconds or a Go duration).").
			Default("100").InGroup(gCommit),
		sdk.Duration(keyRetryMaxBackoff).
			Describe("Longest wait between commit attempts (milliseconds or a Go duration).").
			Default("5000").InGroup(gCommit),
		sdk.Duration(keyRetryTransientTimeout).
			Describe("How long a table commit keeps retrying (with the backoff above) while the catalog or the object store is unavailable: a refused connection, a timeout, a 5xx answer, a database restarting. These retries do not count against iceberg.commit.retry.max-attempts, which is for conflicts with other writers. Past it the commit fails as transient, and the host restarts the task with backoff (milliseconds or a Go duration).").
			Default("120000").InGroup(gCommit),
		sdk.Duration(keyRequestTimeout).
			Describe("Longest wait for the catalog's answer to one request (a table load, a commit), so that a catalog that accepts the connection but never answers does not hold the commit forever. A commit whose answer did not come in time may still have been applied: the table is read back, and the checkpoint committed only if it is not there yet. The wait counts as the catalog unavailable (milliseconds or a Go duration).").
			Default("30000").Min(1).InGroup(gCommit),
	)
	fields = append(fields, sourceFields()...)
	return sdk.NewSpec(fields...).WithCheck(checkSettings).WithProbe(probeCatalog).WithProbe(probeEvolution)
}

// checkSettings is the spec's whole-config check: the rules between keys
// that readSettings enforces, so config/validate reports them instead of
// Open.
func checkSettings(cfg sdk.Config) error {
	_, err := readSettings(cfg, cfg.Map())
	return err
}

func checkTableList(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, err := parseTableName(s); err != nil {
			return err
		}
	}
	return nil
}

// settings is the parsed, cross-checked config.
type settings struct {
	tables []string

	// memoryBytes is the process's share of the worker's memory budget
	// (sdk.KeyMemoryBytes); 0 without one.
	memoryBytes int64

	catalog lake.CatalogConfig

	autoCreate     bool
	evolve         bool
	defaultPartBy  []partspec.Term
	tablePartBy    map[string][]partspec.Term
	tableProps     map[string]string
	targetFileSize int64

	routeField []string // path; nil when records are not routed
	routeRegex map[string]*regexp.Regexp
	dynamic    bool
	// skipUnrouted drops records that reach no table instead of
	// rejecting them (iceberg.tables.unrouted=skip).
	skipUnrouted bool
	// logUnrouted logs the skipped count at each checkpoint
	// (iceberg.tables.unrouted.log).
	logUnrouted    bool
	sourceMetadata bool
	// recordKey and recordHeaders add the __key and __headers columns.
	recordKey, recordHeaders bool
	// forceOptional makes every created or added column optional
	// (iceberg.tables.schema-force-optional).
	forceOptional bool
	// caseInsensitive matches field names to columns ignoring case
	// (iceberg.tables.schema-case-insensitive).
	caseInsensitive bool
	// writeProps are laid over the table properties when writing data
	// files (iceberg.tables.write-props.*).
	writeProps map[string]string

	retryAttempts    int
	retryBackoff     time.Duration
	retryMaxBackoff  time.Duration
	transientTimeout time.Duration
	requestTimeout   time.Duration
}

// parseSettings validates cfg against the spec (fields, then
// checkSettings) and reads it. Its errors name the key and say what is
// expected; errors.As finds an sdk.ConfigError for each problem.
func parseSettings(cfg sdk.Config) (settings, error) {
	raw := cfg.Map()
	parsed, err := Spec().Parse(raw)
	if err != nil {
		return settings{}, fmt.Errorf("iceberg sink: invalid config: %w", err)
	}
	s, err := readSettings(parsed, raw)
	if err != nil {
		return settings{}, fmt.Errorf("iceberg sink: invalid config: %w", err)
	}
	return s, nil
}

// readSettings reads and cross-checks cfg, whose fields passed their own
// checks and which has the spec's defaults. The catalog keys are read from
// raw, without the defaults: lake.ParseCatalogConfig tells an unset
// catalog name from the default one. Each problem is an sdk.KeyError
// naming the key to change; several are joined.
func readSettings(cfg sdk.Config, raw map[string]string) (settings, error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, sdk.KeyError(key, format, args...))
	}

	r := cfg.Reader()
	s := settings{
		autoCreate:      r.Bool(keyAutoCreate),
		evolve:          r.Bool(keyEvolve),
		tablePartBy:     map[string][]partspec.Term{},
		tableProps:      map[string]string{},
		targetFileSize:  r.Int64(keyTargetFileSize),
		routeRegex:      map[string]*regexp.Regexp{},
		dynamic:         r.Bool(keyDynamic),
		skipUnrouted:    cfg.String(keyUnrouted) != unroutedReject,
		logUnrouted:     r.Bool(keyUnroutedLog),
		sourceMetadata:  r.Bool(keySourceMetadata),
		forceOptional:   r.Bool(keyForceOptional),
		caseInsensitive: r.Bool(keyCaseInsensitive),
		recordKey:       r.Bool(keyRecordKey),
		recordHeaders:   r.Bool(keyRecordHeaders),
		retryAttempts:   r.Int(keyRetryAttempts),
		retryBackoff:    r.Duration(keyRetryBackoff),
		retryMaxBackoff: r.Duration(keyRetryMaxBackoff),
	}
	s.transientTimeout = r.Duration(keyRetryTransientTimeout)
	s.requestTimeout = r.Duration(keyRequestTimeout)
	s.memoryBytes, _ = strconv.ParseInt(cfg.String(sdk.KeyMemoryBytes), 10, 64)
	if err := r.Err(); err != nil {
		errs = append(errs, err)
	}
	cat, err := lake.ParseCatalogConfig(raw)
	if err != nil {
		errs = append(errs, catalogError(err))
	}
	s.catalog = cat
	if s.retryMaxBackoff < s.retryBackoff {
		s.retryMaxBackoff = s.retryBackoff
	}

	seen := map[string]bool{}
	for _, t := range cfg.List(keyTables) {
		id, err := parseTableName(t)
		if err != nil {
			bad(keyTables, "%v", err)
			continue
		}
		name := tableKey(id)
		if seen[name] {
			bad(keyTables, "table %s is listed twice", name)
			continue
		}
		seen[name] = true
		s.tables = append(s.tables, name)
	}

	if v := strings.TrimSpace(cfg.String(keyDefaultPartBy)); v != "" {
		terms, err := partspec.Parse(v)
		if err != nil {
			bad(keyDefaultPartBy, "%v", err)
		}
		s.defaultPartBy = terms
	}

	if f := strings.TrimSpace(cfg.String(keyRouteField)); f != "" {
		s.routeField = strings.Split(f, ".")
		if slices.Contains(s.routeField, "") {
			bad(keyRouteField, "%q is not a field path (expected name or a.b)", f)
		}
	}

	// Per-table keys: iceberg.table.<ns.table>.<setting>. Table names
	// contain dots, so the setting is matched as a suffix.
	perTable := cfg.Prefixed(prefixTable)
	regexKeys := map[string]string{} // table → its route-regex key
	for _, k := range slices.Sorted(maps.Keys(perTable)) {
		v := strings.TrimSpace(perTable[k])
		full := prefixTable + k
		switch {
		case strings.HasSuffix(k, suffixPartitionBy):
			id, err := parseTableName(strings.TrimSuffix(k, suffixPartitionBy))
			if err != nil {
				bad(full, "%v", err)
				continue
			}
			terms, err := partspec.Parse(v)
			if err != nil {
				bad(full, "%v", err)
				continue
			}
			s.tablePartBy[tableKey(id)] = terms
		case strings.HasSuffix(k, suffixRouteRegex):
			id, err := parseTableName(strings.TrimSuffix(k, suffixRouteRegex))
			if err != nil {
				bad(full, "%v", err)
				continue
			}
			re, err := regexp.Compile(`^(?:` + v + `)$`)
			if err != nil {
				bad(full, "invalid regular expression %q: %v", v, err)
				continue
			}
			name := tableKey(id)
			if !seen[name] {
				bad(full, "table %s is not listed in %s", name, keyTables)
				continue
			}
			s.routeRegex[name] = re
			regexKeys[name] = full
		default:
			bad(full, "unknown per-table setting (supported: iceberg.table.<namespace.table>.partition-by and .route-regex)")
		}
	}

	for k, v := range cfg.Prefixed(prefixCreateProps) {
		s.tableProps[k] = v
	}

	if wp := cfg.Prefixed(prefixWriteProps); len(wp) > 0 {
		s.writeProps = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(wp)) {
			v := strings.TrimSpace(wp[k])
			if err := checkWriteProp(k, v); err != nil {
				bad(prefixWriteProps+k, "%v", err)
				continue
			}
			if k == propCodec {
				v = strings.ToLower(v) // iceberg-go matches lower-case names only
			}
			s.writeProps[k] = v
		}
		// The Apache sink's writers roll files at the write-props' target
		// size; floe's own key, when set, wins.
		if v, ok := s.writeProps[propTargetFileSize]; ok {
			if _, set := raw[keyTargetFileSize]; !set {
				s.targetFileSize, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}

	// The routing rules between keys, once each key is fine by itself.
	if len(errs) == 0 {
		switch {
		case s.dynamic && s.routeField == nil:
			bad(keyRouteField, "not set, but %s is true: dynamic routing names each record's table by this field", keyDynamic)
		case s.dynamic && len(s.routeRegex) > 0:
			for _, t := range slices.Sorted(maps.Keys(regexKeys)) {
				bad(regexKeys[t], "does not apply with %s=true: dynamic routing names tables by %s; remove it", keyDynamic, keyRouteField)
			}
		case !s.dynamic && len(s.tables) == 0:
			bad(keyTables, "set at least one table (namespace.table), or set %s=true with %s", keyDynamic, keyRouteField)
		case !s.dynamic && s.routeField != nil:
			for _, t := range s.tables {
				if s.routeRegex[t] == nil {
					bad(prefixTable+t+suffixRouteRegex, "not set, so table %s would receive no records; set a regex for the values of %s it takes",
						t, keyRouteField)
				}
			}
		case !s.dynamic && len(s.routeRegex) > 0:
			bad(keyRouteField, "not set, but the route-regex settings need it (the field whose value they match)")
		}
	}

	if len(errs) > 0 {
		return settings{}, errors.Join(errs...)
	}
	return s, nil
}

// Writer properties checked before use: iceberg-go writes Parquet only,
// falls back to uncompressed on a codec it does not know, and takes the
// sizes as integers.
const (
	propFormat         = "write.format.default"
	propCodec          = "write.parquet.compression-codec"
	propTargetFileSize = "write.target-file-size-bytes"
)

var (
	parquetCodecs = []string{"uncompressed", "snappy", "gzip", "brotli", "lz4", "lz4raw", "zstd"}
	writeIntProps = []string{propTargetFileSize, "write.parquet.compression-level", "write.parquet.row-group-limit",
		"write.parquet.row-group-size-bytes", "write.parquet.page-size-bytes", "write.parquet.page-row-limit",
		"write.parquet.dict-size-bytes"}
)

// checkWriteProp checks a value of iceberg.tables.write-props.<k>.
func checkWriteProp(k, v string) error {
	switch {
	case k == propFormat:
		if !strings.EqualFold(v, "parquet") {
			return fmt.Errorf("%q is not supported: floe writes Parquet data files only", v)
		}
	case k == propCodec:
		if !slices.Contains(parquetCodecs, strings.ToLower(v)) {
			return fmt.Errorf("unknown Parquet codec %q (supported: %s)", v, strings.Join(parquetCodecs, ", "))
		}
	case slices.Contains(writeIntProps, k):
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || (n <= 0 && k != "write.parquet.compression-level") {
			return fmt.Errorf("%q is not a positive integer", v)
		}
		if k == propTargetFileSize && n < 1<<20 {
			return fmt.Errorf("%d is below 1 MiB, the least %s takes", n, keyTargetFileSize)
		}
	}
	return nil
}

// catalogError attributes an error of lake.ParseCatalogConfig, whose
// message starts with the key it is about, to that key. The host's
// floe.data.dir is no key a user sets: its problems go under the catalog
// URI, which replaces it.
func catalogError(err error) error {
	msg := err.Error()
	for _, key := range []string{keyCatalogURI, keyWarehouse, keyCatalogType, keyDataDir} {
		shown := key
		if key == keyDataDir {
			shown = keyCatalogURI
		}
		if rest, ok := strings.CutPrefix(msg, key+": "); ok {
			if key == keyDataDir {
				rest = msg
			}
			return sdk.KeyError(shown, "%s", rest)
		}
		if strings.HasPrefix(msg, key+" ") {
			return sdk.KeyError(shown, "%s", msg)
		}
	}
	return err
}

// partitionBy returns the partition terms of a table.
func (s settings) partitionBy(table string) []partspec.Term {
	if t, ok := s.tablePartBy[table]; ok {
		return t
	}
	return s.defaultPartBy
}

// metaColumns says which of floe's columns the tables get.
func (s settings) metaColumns() metaColumns {
	return metaColumns{source: s.sourceMetadata, key: s.recordKey, headers: s.recordHeaders}
}

// createProps returns the properties of a table the sink creates.
func (s settings) createProps() map[string]string {
	props := make(map[string]string, len(defaultTableProps)+len(s.tableProps))
	for k, v := range defaultTableProps {
		props[k] = v
	}
	for k, v := range s.tableProps {
		props[k] = v
	}
	return props
}
