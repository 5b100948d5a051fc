package sdktest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// describe finds the case's component in the target, failing the check if
// the target does not declare it.
func (s *session) describe(kind sdk.Kind, name string) client.Component {
	s.t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	comps, err := s.p.Describe(ctx)
	if err != nil {
		s.t.Fatalf("Describe: %v", err)
	}
	var have []string
	for _, c := range comps {
		if c.Kind == kind && (c.Name == name || slices.Contains(c.Aliases, name)) {
			return c
		}
		have = append(have, fmt.Sprintf("%s %q", c.Kind, c.Name))
	}
	s.t.Fatalf("the plugin declares no %s component %q; it declares: %s", kind, name, strings.Join(have, ", "))
	return client.Component{}
}

var knownTypes = []sdk.Type{sdk.TypeString, sdk.TypeInt, sdk.TypeLong, sdk.TypeDouble, sdk.TypeBoolean, sdk.TypeList, sdk.TypeDuration, sdk.TypePassword}

// checkSpec is the "spec" check every kit runs: the declaration is
// well-formed, defaults pass their own validation, secrets are marked, and
// the case's config is valid.
func checkSpec(t tb, s *session, kind sdk.Kind, name string, config map[string]string, notSecret []string) {
	t.Helper()
	c := s.describe(kind, name)
	if c.Version == "" {
		t.Logf("hint: %s %q declares no Version; `floe plugins` shows it", kind, c.Name)
	}
	seen := map[string]bool{}
	defaults := map[string]string{}
	for _, f := range c.Fields {
		switch {
		case f.Name == "":
			t.Errorf("a config field has no name")
			continue
		case strings.IndexFunc(f.Name, unicode.IsSpace) >= 0:
			t.Errorf("config key %q contains white space", f.Name)
		case seen[f.Name]:
			t.Errorf("config key %q is declared twice", f.Name)
		}
		seen[f.Name] = true
		if !slices.Contains(knownTypes, f.Type) {
			t.Errorf("config key %q has type %q; want one of %v", f.Name, f.Type, knownTypes)
		}
		if f.Required && f.HasDefault {
			t.Errorf("config key %q is required and has a default %q; a key with a default is optional", f.Name, f.DefaultValue)
		}
		switch f.Importance {
		case "", sdk.High, sdk.Medium, sdk.Low:
		default:
			t.Errorf("config key %q has importance %q; want HIGH, MEDIUM or LOW", f.Name, f.Importance)
		}
		if f.Type == sdk.TypePassword && !f.Secret {
			t.Errorf("config key %q is a PASSWORD but not marked secret", f.Name)
		}
		if looksSecret(f.Name) && !f.Secret && f.Type != sdk.TypePassword && !slices.Contains(notSecret, f.Name) {
			t.Errorf("config key %q looks like a secret but is neither a Password field nor Sensitive(); "+
				"declare it with sdk.Password (or list it in the case's NotSecret if it is not one)", f.Name)
		}
		if f.HasDefault && !f.Prefix {
			defaults[f.Name] = f.DefaultValue
		}
		if f.Doc == "" {
			t.Logf("hint: config key %q has no Describe text", f.Name)
		}
	}
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	errs, err := s.p.Validate(ctx, kind, name, defaults)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, e := range errs {
		if _, ok := defaults[e.Key]; ok {
			t.Errorf("the default %q of config key %q fails the key's own validation: %s", defaults[e.Key], e.Key, e.Message)
		}
	}
	errs, err = s.p.Validate(ctx, kind, name, config)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, e := range errs {
		t.Errorf("the case's Config is invalid: %s", e)
	}
}

// looksSecret is floe's one classification of secret keys, the one the
// host redacts by.
func looksSecret(key string) bool { return sdk.IsSecretKey(key) }

// badConfig is one config Open must refuse, and the key the refusal must
// name.
type badConfig struct {
	key    string
	config map[string]string
	what   string
}

// invalidConfigs returns the configs the invalid_config check tries: the
// case's own, or up to three derived from the spec (a typed key given a
// malformed value, a key outside its choices, a required key left out).
func invalidConfigs(c client.Component, base, given map[string]string) []badConfig {
	var out []badConfig
	for _, key := range slices.Sorted(maps.Keys(given)) {
		cfg := maps.Clone(base)
		if cfg == nil {
			cfg = map[string]string{}
		}
		cfg[key] = given[key]
		out = append(out, badConfig{key: key, config: cfg, what: fmt.Sprintf("%s=%q", key, given[key])})
	}
	if len(out) > 0 {
		return out
	}
	for _, f := range c.Fields {
		if f.Prefix || len(out) >= 3 {
			continue
		}
		cfg := maps.Clone(base)
		if cfg == nil {
			cfg = map[string]string{}
		}
		var bad string
		switch {
		case len(f.Allowed) > 0:
			bad = "none-of-the-allowed-values"
		case f.Type == sdk.TypeInt, f.Type == sdk.TypeLong, f.Type == sdk.TypeDouble, f.Type == sdk.TypeDuration:
			bad = "not-a-number"
		case f.Type == sdk.TypeBoolean:
			bad = "maybe"
		case f.Required:
			if _, ok := cfg[f.Name]; ok {
				delete(cfg, f.Name)
				out = append(out, badConfig{key: f.Name, config: cfg, what: "without required key " + f.Name})
			}
			continue
		default:
			continue
		}
		cfg[f.Name] = bad
		out = append(out, badConfig{key: f.Name, config: cfg, what: fmt.Sprintf("%s=%q", f.Name, bad)})
	}
	return out
}

// checkInvalidConfig is the "invalid_config" check: open must refuse each
// bad config with an error naming the key, and when the component declares
// the key, Validate (the REST API's config/validate) must refuse it too,
// under that key, so such a config is never accepted and then fails when
// its task starts. (A key another component declares, such as a sink's key
// a partitioner reads, is that component's to validate.) open returns a
// close function when it (wrongly) succeeds.
func checkInvalidConfig(t tb, s *session, comp client.Component, bad []badConfig, open func(cfg map[string]string) (closeFn func(), err error)) {
	t.Helper()
	if len(bad) == 0 {
		t.Skip("no invalid config given and none derivable from the spec (no typed, enumerated or required keys)")
	}
	for _, b := range bad {
		closeFn, err := open(b.config)
		if err == nil {
			closeFn()
			t.Errorf("Open accepted the config %s; it must refuse it with an error naming %q", b.what, b.key)
			continue
		}
		if !strings.Contains(err.Error(), b.key) {
			t.Errorf("Open refused the config %s, but its error does not name the key %q: %v", b.what, b.key, err)
		}
		if !declares(comp, b.key) {
			continue
		}
		ctx, cancel := s.callCtx(callTimeout)
		errs, verr := s.p.Validate(ctx, comp.Kind, comp.Name, b.config)
		cancel()
		switch {
		case verr != nil:
			t.Errorf("Validate of the config %s: %v", b.what, verr)
		case len(errs) == 0:
			t.Errorf("Open refused the config %s (%v), but Validate accepted it, so config/validate and a create would too; "+
				"state the rule in the spec, with a field check or sdk.Spec.WithCheck returning sdk.KeyError(%q, ...)", b.what, err, b.key)
		case !slices.ContainsFunc(errs, func(e sdk.ConfigError) bool { return e.Key == b.key || strings.Contains(e.Message, b.key) }):
			t.Errorf("Validate refused the config %s, but under other keys (%v); return sdk.KeyError(%q, ...) so config/validate shows it there", b.what, errs, b.key)
		}
	}
}

// declares reports whether the component declares key, exactly or by a
// prefix field.
func declares(c client.Component, key string) bool {
	return slices.ContainsFunc(c.Fields, func(f sdk.Field) bool {
		return f.Name == key || (f.Prefix && strings.HasPrefix(key, f.Name))
	})
}
