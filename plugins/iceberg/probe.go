package iceberg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// The kafka source's keys the probe reads (plugins/kafka/config.go; a
// plugin imports no other plugin). A plugin receives only the keys its
// spec declares, so sourceFields declares them for the sink too.
const (
	keyTopics             = "topics"
	keyTopicsRegex        = "topics.regex"
	keyRegistryURL        = "schema.registry.url"
	keyRegistryUserInfo   = "schema.registry.basic.auth.user.info"
	keyRegistryCALocation = "schema.registry.ssl.ca.location"
	keyRegistryTruststore = "schema.registry.ssl.truststore.location"
	keyRegistryCert       = "schema.registry.ssl.certificate.location"
	keyRegistryKey        = "schema.registry.ssl.key.location"
	keyRegistryTimeout    = "schema.registry.request.timeout.ms"
	keySubjectStrategy    = "value.subject.name.strategy"
)

// probeCatalog is the sink's first probe (config/validate only): it opens
// the catalog and checks the warehouse's object store, as Open does at
// start, so a wrong URI, refused credentials, a warehouse the catalog
// refuses or a missing bucket show at validate as an error on the key to
// fix. Settings the spec's checks reject pass here.
func probeCatalog(ctx context.Context, cfg sdk.Config) error {
	s, err := readSettings(cfg, cfg.Map())
	if err != nil {
		return nil
	}
	_, closeCat, err := lake.OpenCatalog(ctx, s.catalog)
	if err != nil {
		return catalogError(err)
	}
	_ = closeCat()
	return lake.CheckWarehouse(ctx, s.catalog)
}

// sourceFields declares the source's keys the probe reads. The kafka
// source owns and checks them; here they only travel to the sink.
func sourceFields() []*sdk.Field {
	const g = "Schema evolution probe (the source's keys)"
	borrowed := func(f *sdk.Field, what string) *sdk.Field {
		return f.Describe("The source's " + what + ", read by config/validate's schema-evolution probe.").InGroup(g).Rank(sdk.Low)
	}
	return []*sdk.Field{
		borrowed(sdk.List(keyTopics), "topics"),
		borrowed(sdk.String(keyTopicsRegex), "topic pattern"),
		borrowed(sdk.String(keyRegistryURL), "Schema Registry URL"),
		borrowed(sdk.Password(keyRegistryUserInfo), "Schema Registry credentials (user:password)"),
		borrowed(sdk.String(keyRegistryCALocation), "Schema Registry CA file"),
		borrowed(sdk.String(keyRegistryTruststore), "Schema Registry truststore"),
		borrowed(sdk.String(keyRegistryCert), "Schema Registry client certificate"),
		borrowed(sdk.String(keyRegistryKey), "Schema Registry client key"),
		borrowed(sdk.String(keyRegistryTimeout), "Schema Registry request timeout"),
		borrowed(sdk.String(keySubjectStrategy), "subject name strategy"),
	}
}

// probeEvolution is the sink's probe (config/validate only): it checks
// that the latest value schema of each topic's subject can evolve every
// existing table the connector writes, as PrepareSchema would at run time,
// before any data flows. A refusal is an sdk.KeyError on topics naming the
// subject, the table, the field and both types.
//
// It checks only what is known before data: static topics with
// TopicNameStrategy (subject <topic>-value), static tables that exist.
// topics.regex, the record-name strategies, dynamic routing, a subject
// without versions, a table not yet created and a catalog it cannot reach
// pass quietly. A registry that fails or does not answer is an error on
// schema.registry.url.
func probeEvolution(ctx context.Context, cfg sdk.Config) error {
	rawURL := strings.TrimSpace(cfg.String(keyRegistryURL))
	topics := cfg.List(keyTopics)
	if rawURL == "" || len(topics) == 0 || strings.TrimSpace(cfg.String(keyTopicsRegex)) != "" {
		return nil
	}
	strategy := cfg.String(keySubjectStrategy)
	if _, err := schemas.Subject(strategy, "t", "", false); err != nil {
		return nil // a record-name strategy (or a bad one, which the source reports)
	}
	s, err := readSettings(cfg, cfg.Map())
	if err != nil || s.dynamic || len(s.tables) == 0 {
		return nil // the spec's checks report bad settings
	}

	tables := existingTables(ctx, s)
	if len(tables) == 0 {
		return nil
	}
	reg, err := probeRegistry(cfg, rawURL, strategy)
	if err != nil {
		return err
	}

	var errs []error
	for _, topic := range topics {
		subject, err := schemas.Subject(strategy, topic, "", false)
		if err != nil {
			continue
		}
		start := time.Now()
		latest, err := reg.Latest(ctx, subject)
		if errors.Is(err, schemas.ErrSchemaNotFound) {
			continue // no version yet: nothing to check before data
		}
		if err != nil {
			return sdk.KeyError(keyRegistryURL, "%s", registryProblem(err, rawURL, subject, time.Since(start)))
		}
		for _, tbl := range tables {
			if err := checkEvolution(s, tbl, topic, subject, latest); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// existingTables loads the connector's tables that exist. A catalog that
// cannot be opened or a table that cannot be loaded is skipped: without
// the table there is nothing to compare, and the task's Open and first
// schema report catalog problems with their own context.
func existingTables(ctx context.Context, s settings) []*table.Table {
	cat, closeCat, err := lake.OpenCatalog(ctx, s.catalog)
	if err != nil {
		return nil
	}
	defer func() { _ = closeCat() }()
	var out []*table.Table
	for _, name := range s.tables {
		id, err := parseTableName(name)
		if err != nil {
			continue
		}
		if tbl, err := cat.LoadTable(ctx, id); err == nil {
			out = append(out, tbl)
		}
	}
	return out
}

// checkEvolution plans what rows of latest need of tbl, exactly as
// evolveTable does, and reports what the sink would refuse.
func checkEvolution(s settings, tbl *table.Table, topic, subject string, latest *schemas.Registered) error {
	name := tableKey(tbl.Identifier())
	what := fmt.Sprintf("the latest schema of subject %q (id %d, topic %s) cannot be written to table %s", subject, latest.ID, topic, name)
	input, err := tableInputSchema(valueSchema(latest.Arrow), s.metaColumns())
	if err != nil {
		return sdk.KeyError(keyTopics, "%s: %v", what, err)
	}
	if s.caseInsensitive {
		target, err := schemas.ArrowForTable(tbl.Schema())
		if err != nil {
			return sdk.KeyError(keyTopics, "%s: %v", what, err)
		}
		if input, _, err = foldNames(input, target); err != nil {
			return sdk.KeyError(keyTopics, "%s: %v", what, err)
		}
	}
	plan, err := schemas.PlanEvolution(tbl.Schema(), input)
	var inc *schemas.IncompatibleError
	switch {
	case errors.As(err, &inc):
		return sdk.KeyError(keyTopics, "%s: field %s: the table has %s, the schema has %s: %s",
			what, inc.Path, inc.TableType, inc.RecordType, inc.Reason)
	case err != nil:
		return sdk.KeyError(keyTopics, "%s: %v", what, err)
	case !plan.Empty() && !s.evolve:
		return sdk.KeyError(keyTopics, "%s: it needs %s, and %s is false", what, plan, keyEvolve)
	}
	return nil
}

// probeRegistry builds a registry client from the kafka source's keys.
func probeRegistry(cfg sdk.Config, rawURL, strategy string) (*schemas.Registry, error) {
	rc := schemas.RegistryConfig{
		URL:             rawURL,
		CAFile:          strings.TrimSpace(cfg.String(keyRegistryCALocation)),
		CertFile:        strings.TrimSpace(cfg.String(keyRegistryCert)),
		KeyFile:         strings.TrimSpace(cfg.String(keyRegistryKey)),
		SubjectStrategy: strategy,
		Timeout:         schemas.DefaultRegistryTimeout,
	}
	if rc.CAFile == "" {
		rc.CAFile = strings.TrimSpace(cfg.String(keyRegistryTruststore))
	}
	if v := strings.TrimSpace(cfg.String(keyRegistryTimeout)); v != "" {
		if d, err := sdk.ParseDuration(v); err == nil && d > 0 {
			rc.Timeout = d
		}
	}
	if ui := cfg.String(keyRegistryUserInfo); ui != "" {
		rc.Username, rc.Password, _ = strings.Cut(ui, ":")
	}
	reg, err := schemas.NewRegistry(rc)
	if err != nil {
		return nil, sdk.KeyError(keyRegistryURL, "%v", err)
	}
	return reg, nil
}

// registryProblem says what went wrong asking the registry for subject's
// latest schema; a timeout reads "schema registry <url>: subject "s":
// timeout after 10s".
func registryProblem(err error, rawURL, subject string, took time.Duration) string {
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		shown := rawURL
		if u, perr := url.Parse(rawURL); perr == nil {
			shown = u.Redacted()
		}
		return fmt.Sprintf("schema registry %s: subject %q: timeout after %v; check that the registry is running and reachable",
			shown, subject, took.Round(100*time.Millisecond))
	}
	return err.Error()
}
