package sdk

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is a config value type. The names are Kafka Connect's where Connect
// has one, so Connect tooling shows them unchanged.
type Type string

// Config value types.
const (
	TypeString   Type = "STRING"
	TypeInt      Type = "INT"  // 32-bit integer
	TypeLong     Type = "LONG" // 64-bit integer
	TypeDouble   Type = "DOUBLE"
	TypeBoolean  Type = "BOOLEAN"
	TypeList     Type = "LIST"     // comma-separated strings
	TypeDuration Type = "DURATION" // Go duration ("10s") or plain milliseconds
	TypePassword Type = "PASSWORD" // a secret string, never echoed back
)

// Importance ranks a key in listings, as in Kafka Connect.
type Importance string

// Importance levels.
const (
	High   Importance = "HIGH"
	Medium Importance = "MEDIUM"
	Low    Importance = "LOW"
)

// Field declares one config key. Build it with a constructor such as
// [String] and chain the setters; a field with a default is optional.
type Field struct {
	Name         string
	Type         Type
	Doc          string
	DefaultValue string
	HasDefault   bool
	Required     bool
	Secret       bool
	Group        string
	Example      string
	Allowed      []string
	// Prefix marks a family of keys: every key that starts with Name is
	// accepted and handed to the plugin unchecked (for example "kafka.").
	Prefix     bool
	Importance Importance

	checks []func(string) error
}

func newField(name string, t Type) *Field {
	return &Field{Name: name, Type: t, Importance: Medium}
}

// String declares a string key.
func String(name string) *Field { return newField(name, TypeString) }

// Int declares a 32-bit integer key.
func Int(name string) *Field { return newField(name, TypeInt) }

// Long declares a 64-bit integer key.
func Long(name string) *Field { return newField(name, TypeLong) }

// Double declares a floating-point key.
func Double(name string) *Field { return newField(name, TypeDouble) }

// Bool declares a boolean key ("true" or "false").
func Bool(name string) *Field { return newField(name, TypeBoolean) }

// List declares a comma-separated list key.
func List(name string) *Field { return newField(name, TypeList) }

// Duration declares a duration key: a Go duration ("1500ms", "10s") or a
// plain number of milliseconds, as Kafka Connect's *.ms keys are.
func Duration(name string) *Field { return newField(name, TypeDuration) }

// Password declares a secret string: validated like a string, never echoed
// back by the REST API or written to logs.
func Password(name string) *Field {
	f := newField(name, TypePassword)
	f.Secret = true
	return f
}

// Prefix declares a family of pass-through keys, every key that starts with
// prefix (for example "kafka." for librdkafka settings).
func Prefix(prefix string) *Field {
	f := newField(prefix, TypeString)
	f.Prefix = true
	return f
}

// Describe sets the documentation shown by the API and `floe plugins`.
func (f *Field) Describe(doc string) *Field { f.Doc = doc; return f }

// Default sets the default value; the key becomes optional.
func (f *Field) Default(v string) *Field {
	f.DefaultValue, f.HasDefault, f.Required = v, true, false
	return f
}

// Require makes the key mandatory.
func (f *Field) Require() *Field { f.Required = true; return f }

// Sensitive marks the value as a secret.
func (f *Field) Sensitive() *Field { f.Secret = true; return f }

// InGroup sets the display group.
func (f *Field) InGroup(g string) *Field { f.Group = g; return f }

// WithExample sets an example value for docs.
func (f *Field) WithExample(v string) *Field { f.Example = v; return f }

// Rank sets the importance.
func (f *Field) Rank(i Importance) *Field { f.Importance = i; return f }

// OneOf restricts the value to the given choices.
func (f *Field) OneOf(values ...string) *Field {
	f.Allowed = append([]string(nil), values...)
	return f
}

// Min requires a numeric value of at least min (NaN is not).
func (f *Field) Min(min float64) *Field {
	return f.Check(func(v string) error {
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil && !(n >= min) {
			return fmt.Errorf("must be at least %v", min)
		}
		return nil
	})
}

// Max requires a numeric value of at most max (NaN is not).
func (f *Field) Max(max float64) *Field {
	return f.Check(func(v string) error {
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err == nil && !(n <= max) {
			return fmt.Errorf("must be at most %v", max)
		}
		return nil
	})
}

// Check adds a validator that runs after the type check, in the plugin.
func (f *Field) Check(fn func(value string) error) *Field {
	f.checks = append(f.checks, fn)
	return f
}

// validate checks one present value against the field.
func (f *Field) validate(v string) error {
	if err := checkType(f.Type, v); err != nil {
		return err
	}
	if len(f.Allowed) > 0 && !slices.Contains(f.Allowed, v) {
		return fmt.Errorf("must be one of %s, got %q", strings.Join(f.Allowed, ", "), v)
	}
	for _, c := range f.checks {
		if err := c(v); err != nil {
			return err
		}
	}
	return nil
}

func checkType(t Type, v string) error {
	var err error
	switch t {
	case TypeInt:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	case TypeLong:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	case TypeDouble:
		_, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
	case TypeBoolean:
		_, err = strconv.ParseBool(strings.TrimSpace(v))
	case TypeDuration:
		_, err = ParseDuration(v)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("invalid %s value %q", strings.ToLower(string(t)), v)
	}
	return nil
}

// ParseDuration reads a Go duration ("10s") or plain milliseconds ("1000").
func ParseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(ms) * time.Millisecond, nil
	}
	return time.ParseDuration(v)
}

// ConfigError is one problem with one key. It is an error, so a [Spec]
// check can return it (build it with [KeyError]), alone or joined with
// others ([errors.Join]).
type ConfigError struct {
	// Key is the config key the problem is about. It is empty for a
	// problem with the config as a whole: an error a check returned
	// without naming a key. floe shows those under the key that names the
	// component (connector.class for a sink, source for a source, and so
	// on).
	Key     string
	Message string
}

func (e ConfigError) Error() string {
	if e.Key == "" {
		return e.Message
	}
	return fmt.Sprintf("%s: %s", e.Key, e.Message)
}

// KeyError returns a [ConfigError] about key, for a [Spec] check to return:
// config/validate shows the message under that key. The message says what
// is expected, without repeating the key:
//
//	sdk.KeyError("topics", "set topics or topics.regex")
func KeyError(key, format string, args ...any) error {
	return ConfigError{Key: key, Message: fmt.Sprintf(format, args...)}
}

// Spec is a component's whole config declaration: its fields, and the
// checks that look at several keys at once. Build it with [NewSpec],
// [Spec.WithCheck] and [Spec.WithProbe].
type Spec struct {
	fields []*Field
	checks []func(Config) error
	probes []Probe
}

// NewSpec declares a component's config keys.
func NewSpec(fields ...*Field) Spec {
	return Spec{fields: fields}
}

// WithCheck returns the spec with a rule over the whole config added: a
// rule no single field can state ("set topics or topics.regex", "a
// route-regex needs a route field"). fn gets the config with the spec's
// defaults applied, and runs in the plugin after every field passed its
// own checks, both for the REST API's config/validate and before Open, so
// a config it refuses is never accepted and then fails at Open.
//
// Return nil when the config is fine. Return [KeyError] to attribute a
// problem to a key, and [errors.Join] of several to report them all at
// once; any other error is about the config as a whole (see
// [ConfigError.Key]). A wrapping error (fmt.Errorf with %w) keeps the
// keys of what it wraps. fn must not block or reach other systems:
// config/validate waits for it, and it runs before every Open. Checks
// against other systems go in [Spec.WithProbe].
//
// The checks run in the order they were added, all of them.
func (s Spec) WithCheck(fn func(cfg Config) error) Spec {
	s.checks = append(slices.Clip(s.checks), fn)
	return s
}

// Fields returns copies of the declared fields, in declaration order.
func (s Spec) Fields() []Field {
	out := make([]Field, len(s.fields))
	for i, f := range s.fields {
		out[i] = *f
	}
	return out
}

// Lookup finds the field that declares key, by exact name or by prefix.
func (s Spec) Lookup(key string) (Field, bool) {
	for _, f := range s.fields {
		if f.Name == key {
			return *f, true
		}
	}
	for _, f := range s.fields {
		if f.Prefix && strings.HasPrefix(key, f.Name) {
			return *f, true
		}
	}
	return Field{}, false
}

// Validate checks cfg against the spec: required keys present, values of
// the right type and accepted by the field's checks, and then, when every
// field passed, the spec's own checks ([Spec.WithCheck]) on the config
// with defaults applied. Keys the spec does not declare are not reported
// here; the host checks those against every spec a connector uses. Field
// errors come in declaration order.
func (s Spec) Validate(cfg map[string]string) []ConfigError {
	var errs []ConfigError
	for _, f := range s.fields {
		if f.Prefix {
			continue
		}
		v, ok := cfg[f.Name]
		if !ok || (strings.TrimSpace(v) == "" && f.Type != TypeString && f.Type != TypePassword) {
			if f.Required {
				errs = append(errs, ConfigError{f.Name, "missing required configuration \"" + f.Name + "\" which has no default value"})
			}
			continue
		}
		if err := f.validate(v); err != nil {
			errs = append(errs, ConfigError{f.Name, err.Error()})
		}
	}
	if len(errs) > 0 || len(s.checks) == 0 {
		return errs
	}
	c := s.Config(cfg)
	for _, check := range s.checks {
		errs = append(errs, configErrors(check(c))...)
	}
	return errs
}

// configErrors flattens what a check returned into one ConfigError per
// problem: the ConfigErrors it holds (joined errors may hold several),
// and a keyless one for any other error.
func configErrors(err error) []ConfigError {
	// The switch walks the error tree itself (wrappers and joins, one level
	// at a time), which errors.As cannot: it stops at the first match.
	switch e := err.(type) { //nolint:errorlint // see above
	case nil:
		return nil
	case ConfigError:
		return []ConfigError{e}
	case *ConfigError:
		if e != nil {
			return []ConfigError{*e}
		}
	case interface{ Unwrap() []error }:
		var out []ConfigError
		for _, inner := range e.Unwrap() {
			out = append(out, configErrors(inner)...)
		}
		if len(out) > 0 {
			return out
		}
	case interface{ Unwrap() error }:
		// A wrapper keeps the keys of what it wraps; its own text would
		// only repeat them. Without a key inside, its text is the message.
		if inner := configErrors(e.Unwrap()); slices.ContainsFunc(inner, func(ce ConfigError) bool { return ce.Key != "" }) {
			return inner
		}
	}
	return []ConfigError{{Message: err.Error()}}
}

// Parse is what the SDK does with a connector's config before Open: it
// validates raw ([Spec.Validate]) and applies the defaults
// ([Spec.Config]). The error joins one [ConfigError] per problem
// ([errors.Join]), in Validate's order. An Open called by the SDK gets a
// parsed config already; code that builds a config itself (a test, a
// program embedding a component) parses it first, and an Open that wants
// such callers to get the SDK's errors may parse again: Parse of a parsed
// config returns it unchanged.
func (s Spec) Parse(raw map[string]string) (Config, error) {
	if errs := s.Validate(raw); len(errs) > 0 {
		all := make([]error, len(errs))
		for i, e := range errs {
			all[i] = e
		}
		return Config{}, errors.Join(all...)
	}
	return s.Config(raw), nil
}

// Config applies the spec's defaults to raw and returns the result.
func (s Spec) Config(raw map[string]string) Config {
	m := make(map[string]string, len(raw)+len(s.fields))
	for _, f := range s.fields {
		if f.HasDefault && !f.Prefix {
			m[f.Name] = f.DefaultValue
		}
	}
	for k, v := range raw {
		m[k] = v
	}
	return Config{values: m}
}
