package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
	"github.com/riferrei/srclient"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// Dead-letter stages (sdk.DeadLetter.Stage).
const (
	stageDeserialize = "deserialize"
	stageSchema      = "schema"
)

// Registry retry backoff bounds.
const (
	minRegistryBackoff = 100 * time.Millisecond
	maxRegistryBackoff = 5 * time.Second
)

// valueSchema is one value schema id as a task knows it: usable (a decoder
// and a batch builder), or a reason its records are dead-lettered.
type valueSchema struct {
	id int32
	// stage and reason are set when the schema's records cannot be read:
	// stageDeserialize for an id the registry does not know, stageSchema
	// for a schema the host rejected or floe cannot map.
	stage, reason string

	dec     *schemas.Decoder
	value   *arrow.Schema // the value columns (admitted)
	batch   *arrow.Schema // value columns, then the metadata columns
	builder *array.RecordBuilder
	// dataPerRow is, per column of the builder, the bytes per row of the
	// last batch's variable-length values (binary and string columns; 0
	// for the others): the next batch reserves that much at its start.
	dataPerRow []float64
}

// newValueSchema prepares a usable schema: its batch schema and builder.
func newValueSchema(mem memory.Allocator, id int32, dec *schemas.Decoder) *valueSchema {
	value := dec.Schema()
	fields := append(slices.Clone(value.Fields()), metadataFields()...)
	batch := arrow.NewSchema(fields, nil)
	return &valueSchema{id: id, dec: dec, value: value, batch: batch, builder: array.NewRecordBuilder(mem, batch)}
}

func (v *valueSchema) release() {
	if v.builder != nil {
		v.builder.Release()
		v.builder = nil
	}
}

// metadataFields are the metadata columns after the value columns.
func metadataFields() []arrow.Field {
	return []arrow.Field{
		{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: sdk.ColumnHeaders, Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.Binary), Nullable: true},
	}
}

// registryDownError reports that a schema cannot be resolved yet: the
// registry could not answer, or it does not know the id yet (a registry
// restarted with empty storage, replication lag) and
// schema.registry.unknown.timeout.ms has not passed. The record is not at
// fault and stays buffered until the next attempt.
type registryDownError struct{ err error }

func (e *registryDownError) Error() string { return e.err.Error() }
func (e *registryDownError) Unwrap() error { return e.err }

// unknownID is a schema id the registry answered "not found" for. Its
// records wait (the id is asked again with backoff) until unknownTimeout
// has passed since the first such answer; after that they are
// dead-lettered, and the id is still asked again every
// maxRegistryBackoff, so a schema registered later heals it.
type unknownID struct {
	since   time.Time // the first "not found"
	backoff time.Duration
	retryAt time.Time
	// letter is set once unknownTimeout has passed: the dead-letter
	// verdict for the id's records until the registry knows it.
	letter *valueSchema
}

// schemaCache resolves schema ids for one task: fetch from the registry
// (retrying while it is down, within retryTimeout, and while it does not
// know an id, within unknownTimeout), admit through the host once, and
// remember a found schema's outcome for the task's lifetime. "Not found"
// is never remembered for good. Only the task's Read goroutine uses it.
type schemaCache struct {
	reg            *schemas.Registry
	registryURL    string
	host           sdk.SourceHost
	log            *slog.Logger
	mem            memory.Allocator
	retryTimeout   time.Duration
	unknownTimeout time.Duration
	now            func() time.Time

	byID    map[int32]*valueSchema
	unknown map[int32]*unknownID
	// downSince is when the registry started failing; zero while it
	// answers. No request is made before retryAt; lastErr is the failure.
	downSince time.Time
	backoff   time.Duration
	retryAt   time.Time
	lastErr   error
}

func newSchemaCache(reg *schemas.Registry, url string, host sdk.SourceHost, log *slog.Logger, mem memory.Allocator, retryTimeout, unknownTimeout time.Duration) *schemaCache {
	return &schemaCache{
		reg: reg, registryURL: url, host: host, log: log, mem: mem,
		retryTimeout: retryTimeout, unknownTimeout: unknownTimeout,
		now: time.Now, byID: map[int32]*valueSchema{}, unknown: map[int32]*unknownID{},
	}
}

func (c *schemaCache) release() {
	for _, v := range c.byID {
		v.release()
	}
}

// get returns schema id's state, fetching and admitting it the first time.
// The error is a *registryDownError when the registry could not answer or
// does not know the id yet (retry later), ctx's error, a host failure, or
// the task's failure once the registry stayed down past retryTimeout.
func (c *schemaCache) get(ctx context.Context, id int32, topic string) (*valueSchema, error) {
	if v := c.byID[id]; v != nil {
		return v, nil
	}
	u := c.unknown[id]
	if u != nil && c.now().Before(u.retryAt) {
		if u.letter != nil {
			return u.letter, nil
		}
		return nil, &registryDownError{err: fmt.Errorf("schema id %d not yet known to the registry", id)}
	}
	if !c.downSince.IsZero() && c.now().Before(c.retryAt) {
		if u != nil && u.letter != nil {
			return u.letter, nil // the registry's outage does not hold back a verdict already given
		}
		return nil, &registryDownError{err: c.lastErr}
	}
	reg, err := c.reg.ByID(ctx, id)
	var unusable *schemas.UnusableError
	switch {
	case err == nil:
		c.up()
		if u != nil {
			delete(c.unknown, id)
			c.log.Info("kafka: schema id now known to the registry", "schema", id, "topic", topic,
				"unknown_for", c.now().Sub(u.since).Round(time.Millisecond), "dead_lettered_meanwhile", u.letter != nil)
		}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, schemas.ErrSchemaNotFound):
		c.up()
		return c.notFound(id, topic, err)
	case errors.As(err, &unusable):
		// The registry answered with a schema floe cannot use (not Avro,
		// a recursive record, a bad reference): its records cannot be
		// read, which is the schema's fault, not the record's nor the
		// registry's, so the reason does not name the registry.
		c.up()
		v := &valueSchema{id: id, stage: stageSchema, reason: fmt.Sprintf("schema id %d cannot be read: %v", id, unusable.Err)}
		c.byID[id] = v
		c.log.Error("kafka: schema unusable; its records go to the dead-letter queue", "schema", id, "topic", topic, "error", unusable.Err)
		return v, nil
	case registryUnavailable(err):
		return nil, c.down(id, topic, err)
	default:
		// The registry answered, but not with a schema (a 4xx other
		// than 404): its records cannot be read; the reason names the
		// registry, whose answer it is.
		c.up()
		v := &valueSchema{id: id, stage: stageSchema, reason: err.Error()} // names the registry and the id
		c.byID[id] = v
		c.log.Error("kafka: schema unusable; its records go to the dead-letter queue", "schema", id, "topic", topic, "error", err)
		return v, nil
	}

	subject := ""
	if named, ok := reg.Avro.(avro.NamedSchema); ok {
		subject, _ = c.reg.Subject(topic, named.FullName(), false)
	}
	err = c.host.AdmitSchema(ctx, sdk.Schema{ID: int64(id), Avro: reg.Text, Arrow: reg.Arrow, Subject: subject})
	switch {
	case err == nil:
		v := newValueSchema(c.mem, id, reg.NewDecoder())
		c.byID[id] = v
		c.log.Info("kafka: schema admitted", "schema", id, "subject", subject, "columns", reg.Arrow.NumFields())
		return v, nil
	case errors.Is(err, sdk.ErrSchemaRejected):
		v := &valueSchema{id: id, stage: stageSchema, reason: err.Error()}
		c.byID[id] = v
		c.log.Warn("kafka: schema rejected by the sink; its records go to the dead-letter queue", "schema", id, "subject", subject, "reason", err)
		return v, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("kafka: admit schema %d (subject %q) of topic %s: %w", id, subject, topic, err)
}

// notFound notes a "not found" answer for id and returns what its records
// do now: wait (a *registryDownError) while unknownTimeout has not passed
// since the first such answer, then go to the dead-letter queue.
func (c *schemaCache) notFound(id int32, topic string, err error) (*valueSchema, error) {
	now := c.now()
	u := c.unknown[id]
	if u == nil {
		u = &unknownID{since: now}
		c.unknown[id] = u
		c.log.Warn("kafka: schema id unknown to the registry; its records wait for it", "schema", id, "topic", topic,
			"wait", c.unknownTimeout, "key", KeyRegistryUnknownTimeout, "error", err)
	}
	u.backoff = min(max(2*u.backoff, minRegistryBackoff), maxRegistryBackoff)
	u.retryAt = now.Add(u.backoff)
	if u.letter != nil {
		return u.letter, nil
	}
	last := u.since.Add(c.unknownTimeout)
	if now.Before(last) {
		u.retryAt = minTime(u.retryAt, last) // the last attempt comes right at the timeout
		return nil, &registryDownError{err: fmt.Errorf("schema id %d not yet known to the registry: %w", id, err)}
	}
	u.letter = &valueSchema{id: id, stage: stageDeserialize,
		reason: fmt.Sprintf("unknown schema id %d (still unknown after %s=%s): %v", id, KeyRegistryUnknownTimeout, c.unknownTimeout, err)}
	c.log.Warn("kafka: schema id still unknown to the registry; its records go to the dead-letter queue until it is registered",
		"schema", id, "topic", topic, "unknown_for", now.Sub(u.since).Round(time.Millisecond), "key", KeyRegistryUnknownTimeout, "error", err)
	return u.letter, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// up notes that the registry answered.
func (c *schemaCache) up() {
	c.downSince, c.backoff, c.retryAt, c.lastErr = time.Time{}, 0, time.Time{}, nil
}

// retryIn is how long until the next registry request a waiting record
// needs may be made: 0 when none waits.
func (c *schemaCache) retryIn() time.Duration {
	var at time.Time
	if !c.downSince.IsZero() {
		at = c.retryAt
	}
	for _, u := range c.unknown {
		if u.letter == nil && (at.IsZero() || u.retryAt.Before(at)) {
			at = u.retryAt
		}
	}
	if at.IsZero() {
		return 0
	}
	return max(at.Sub(c.now()), time.Millisecond)
}

// down notes a failed registry call and returns the error for it: a
// *registryDownError to retry later, or the task's failure once the
// registry has been failing for longer than retryTimeout.
func (c *schemaCache) down(id int32, topic string, err error) error {
	now := c.now()
	if c.downSince.IsZero() {
		c.downSince = now
	}
	c.backoff = min(max(2*c.backoff, minRegistryBackoff), maxRegistryBackoff)
	c.retryAt, c.lastErr = now.Add(c.backoff), err
	if last := c.downSince.Add(c.retryTimeout); last.Before(c.retryAt) {
		c.retryAt = last // the last attempt comes right at the timeout
	}
	if failing := now.Sub(c.downSince); failing >= c.retryTimeout {
		return fmt.Errorf("kafka: schema registry %s failed for %s while reading schema id %d of topic %s (%s=%s): %w; "+
			"check that the registry is up and reachable from floe, then restart the task",
			c.registryURL, failing.Round(time.Second), id, topic, KeyRegistryRetryTimeout, c.retryTimeout, err)
	}
	c.log.Warn("kafka: schema registry failing; retrying", "registry", c.registryURL, "schema", id, "topic", topic,
		"retry_in", c.retryAt.Sub(now), "failing_for", now.Sub(c.downSince).Round(time.Millisecond), "error", err)
	return &registryDownError{err: err}
}

// statusText matches an HTTP status line at the start of an error text,
// as srclient reports non-JSON error responses ("503 Service Unavailable").
var statusText = regexp.MustCompile(`(^|: )[1-5][0-9][0-9] [A-Z]`)

// registryUnavailable reports whether a registry error is the registry's
// or the network's (worth retrying) rather than the schema's: a network
// error, a timeout, or an HTTP error answer (5xx, 401/403 while
// credentials are fixed, …).
func registryUnavailable(err error) bool {
	var netErr net.Error
	var srErr srclient.Error
	switch {
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &srErr):
		return true
	}
	return statusText.MatchString(err.Error())
}
