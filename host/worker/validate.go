package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/host/compat"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// validation is the outcome of validating one connector config.
type validation struct {
	infos ConfigInfos
	// comps holds each component found, as the registry describes it.
	comps map[sdk.Kind]client.Component
	// secrets holds the keys declared PASSWORD (or secret) by a spec.
	secrets map[string]bool
	// ignored holds the keys floe accepts and does not use, with why
	// (compat.Translate).
	ignored []compat.Note
}

func (v validation) ok() bool { return v.infos.ErrorCount == 0 }

// specSet is the union of the specs a connector uses: the host's and one
// per component.
type specSet struct {
	host  sdk.Spec
	comps []compSpec
}

type compSpec struct {
	kind sdk.Kind
	comp client.Component
	spec sdk.Spec
}

// lookup finds the field declaring key: exact names of every spec win
// over prefix fields.
func (s specSet) lookup(key string) (sdk.Field, bool) {
	specs := append([]sdk.Spec{s.host}, s.specs()...)
	for _, sp := range specs {
		if f, ok := sp.Lookup(key); ok && !f.Prefix {
			return f, true
		}
	}
	for _, sp := range specs {
		if f, ok := sp.Lookup(key); ok {
			return f, true
		}
	}
	return sdk.Field{}, false
}

// byOwnership lists the components in the order their declarations win
// in ConfigInfos: the source and the sink own the connector's keys, and
// the partitioner and maintenance declare some of the sink's again (the
// keys they read), which must show as the sink documents them.
func (s specSet) byOwnership() []compSpec {
	rank := map[sdk.Kind]int{sdk.KindSource: 0, sdk.KindSink: 1, sdk.KindPartitioner: 2, sdk.KindMaintenance: 3}
	out := slices.Clone(s.comps)
	slices.SortStableFunc(out, func(a, b compSpec) int { return rank[a.kind] - rank[b.kind] })
	return out
}

func (s specSet) specs() []sdk.Spec {
	out := make([]sdk.Spec, len(s.comps))
	for i, c := range s.comps {
		out[i] = c.spec
	}
	return out
}

// exactNames lists every exactly declared key and every prefix, for "did
// you mean".
func (s specSet) exactNames() []string {
	var out []string
	for _, sp := range append([]sdk.Spec{s.host}, s.specs()...) {
		for _, f := range sp.Fields() {
			out = append(out, f.Name)
		}
	}
	return out
}

// isSecret reports whether a spec declares key as a secret.
func (s specSet) isSecret(key string) bool {
	f, ok := s.lookup(key)
	return ok && (f.Secret || f.Type == sdk.TypePassword)
}

// specFromFields rebuilds a spec from field declarations that came over
// the wire (their custom checks run in the plugin only).
func specFromFields(fields []sdk.Field) sdk.Spec {
	ptrs := make([]*sdk.Field, len(fields))
	for i := range fields {
		f := fields[i]
		ptrs[i] = &f
	}
	return sdk.NewSpec(ptrs...)
}

// resolveSpecs finds the components a config names. problems maps a
// config key to what is wrong with the component it names.
func resolveSpecs(all []client.Component, config map[string]string) (specSet, map[string]string) {
	set := specSet{host: runtime.HostSpec()}
	problems := map[string]string{}
	for _, k := range sdk.AllKinds() {
		name := componentName(config, k)
		if name == "" {
			continue
		}
		c, ok := findComponent(all, k, name)
		if !ok {
			problems[kindKey(k)] = missingComponent(all, k, name)
			continue
		}
		set.comps = append(set.comps, compSpec{kind: k, comp: c, spec: specFromFields(c.Fields)})
	}
	return set, problems
}

// maxSuggestions bounds the unknown keys that get a "did you mean": a
// config of thousands of unknown keys must not cost an edit distance to
// every known key for each.
const maxSuggestions = 100

// validateTimeout bounds one plugin's Validate call (its probes included),
// so a slow or unreachable system never hangs a REST call.
const validateTimeout = 30 * time.Second

// validate checks a connector config against the union of its specs:
// the host's keys (validated here), each component's keys (validated in
// the plugin, started for the purpose), and keys no spec declares. It
// never fails: every problem is an error in the ConfigInfos. It runs no
// probes: it guards create, update, restart and start-up, which must not
// depend on other systems answering.
func (w *Worker) validate(ctx context.Context, config map[string]string) validation {
	v := w.validateWith(ctx, config, false)
	w.logIgnored(config[runtime.KeyName], v)
	return v
}

// validateWith is validate, also running the components' probes
// (sdk.Spec.WithProbe) when probe is set: config/validate only.
//
// The config is validated as floe runs it ([Worker.effective]: Kafka
// Connect's and the Apache Iceberg sink's keys translated); the answer
// lists the keys as given and the derived ones, and an error on a derived
// key names the key it came from.
func (w *Worker) validateWith(ctx context.Context, config map[string]string, probe bool) validation {
	tr := compat.Translate(config, w.cfg.ConnectorDefaults)
	shown := maps.Clone(config)
	for k := range tr.From {
		shown[k] = tr.Config[k]
	}
	// Validated with the providers' values; shown with the references.
	eff, refErrs := w.cfg.Providers.Resolve(tr.Config)
	all := w.plugins.Components()
	set, problems := resolveSpecs(all, eff)
	v := validation{comps: map[sdk.Kind]client.Component{}, secrets: map[string]bool{}, ignored: tr.Ignored}
	for _, c := range set.comps {
		v.comps[c.kind] = c.comp
	}

	b := newInfosBuilder(shown, set)
	b.addFields(set.host.Fields(), "")
	for _, c := range set.byOwnership() {
		b.addFields(c.comp.Fields, c.comp.Name)
	}
	addError := func(key, msg string) {
		if from, ok := tr.From[key]; ok {
			msg = fmt.Sprintf("%s (floe set %s from %s)", msg, key, from)
		}
		b.addError(key, msg)
	}
	for key, msg := range problems {
		addError(key, msg)
	}
	for key, msg := range tr.Errors {
		b.addError(key, msg)
	}
	for key, msg := range refErrs {
		addError(key, msg)
	}
	for _, e := range set.host.Validate(eff) {
		addError(e.Key, e.Message)
	}
	for key, msg := range w.validateInPlugins(ctx, set, eff, probe) {
		for _, m := range msg {
			addError(key, m)
		}
	}
	// Keys nobody declares.
	names := set.exactNames()
	var comps []string
	for _, c := range set.comps {
		comps = append(comps, fmt.Sprintf("%s %s", c.kind, c.comp.Name))
	}
	unknown := 0
	for _, key := range slices.Sorted(maps.Keys(shown)) {
		if _, ok := set.lookup(key); ok {
			continue
		}
		unknown++
		msg := fmt.Sprintf("unknown configuration %q: neither floe nor this connector's components (%s) declare it", key, strings.Join(comps, ", "))
		if strings.HasPrefix(key, "floe.") {
			msg = fmt.Sprintf("%q is reserved: floe sets floe.* keys for its plugins itself", key)
		} else if unknown <= maxSuggestions {
			if s := closest(key, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
		}
		b.addError(key, msg)
	}
	v.secrets = secretsOf(set, shown)
	v.infos = b.build(config[runtime.KeyConnectorClass], v.secrets)
	return v
}

// secretKeys returns the keys of config that a spec declares PASSWORD
// (or secret), as validation finds them, without validating.
func (w *Worker) secretKeys(config map[string]string) map[string]bool {
	tr := compat.Translate(config, w.cfg.ConnectorDefaults)
	shown := maps.Clone(config)
	for k := range tr.From {
		shown[k] = tr.Config[k]
	}
	eff, _ := w.cfg.Providers.Resolve(tr.Config)
	set, _ := resolveSpecs(w.plugins.Components(), eff)
	return secretsOf(set, shown)
}

// secretsOf picks the secret keys of shown.
func secretsOf(set specSet, shown map[string]string) map[string]bool {
	out := map[string]bool{}
	for key := range shown {
		if set.isSecret(key) {
			out[key] = true
		}
	}
	return out
}

// effective is the config a connector runs with: config as
// compat.Translate reads it, with the worker's connector defaults
// (bootstrap.servers, converters), and its config provider references
// resolved. The stored config stays as given.
func (w *Worker) effective(config map[string]string) map[string]string {
	// Config provider references resolved; one that no longer resolves
	// (validation reported it when the config was set) stays as it is,
	// and the plugin reading it says what is wrong.
	eff, _ := w.cfg.Providers.Resolve(compat.Translate(config, w.cfg.ConnectorDefaults).Config)
	return eff
}

// logIgnored logs each key of a connector's config that floe accepts and
// does not use, with why: never silently.
func (w *Worker) logIgnored(name string, v validation) {
	for _, n := range v.ignored {
		w.logger.Warn("connector config key accepted but ignored", "connector", name, "key", n.Key, "why", n.Why)
	}
}

// validateInPlugins runs each component's own validation in its plugin
// process, all at once, each call bounded by validateTimeout; with probe,
// the components' probes run too. Each plugin sees the config it would
// run with (runtime.PluginConfig). A plugin that cannot start or answer in
// time is an error on the key naming its component.
func (w *Worker) validateInPlugins(ctx context.Context, set specSet, config map[string]string, probe bool) map[string][]string {
	var mu sync.Mutex
	out := map[string][]string{}
	add := func(key, msg string) {
		mu.Lock()
		defer mu.Unlock()
		out[key] = append(out[key], msg)
	}
	var wg sync.WaitGroup
	for _, c := range set.comps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc, err := startForValidation(ctx, w.plugins, c.kind, c.comp.Name)
			if err != nil {
				add(kindKey(c.kind), fmt.Sprintf("cannot start the %s plugin %q to validate the config: %v", c.kind, c.comp.Name, err))
				return
			}
			defer proc.Kill()
			// A plugin validates what it would run with: its own keys.
			cfg := runtime.PluginConfig(c.comp.Fields, config, w.cfg.DataDir)
			vctx, cancel := context.WithTimeout(ctx, validateTimeout)
			defer cancel()
			var errs []sdk.ConfigError
			if p, ok := proc.(runtime.ProcessWithProbes); ok && probe {
				errs, err = p.ValidateAndProbe(vctx, c.kind, c.comp.Name, cfg)
			} else {
				errs, err = proc.Validate(vctx, c.kind, c.comp.Name, cfg)
			}
			if err != nil && ctx.Err() == nil && vctx.Err() != nil {
				add(kindKey(c.kind), fmt.Sprintf("the %s plugin %q did not finish validating the config within %v; check that the systems the config names answer", c.kind, c.comp.Name, validateTimeout))
				return
			}
			if err != nil {
				add(kindKey(c.kind), fmt.Sprintf("the %s plugin %q could not validate the config: %v", c.kind, c.comp.Name, err))
				return
			}
			for _, e := range errs {
				// A plugin's whole-config check may name no key: show it
				// under the key that picked the plugin.
				key := e.Key
				if key == "" {
					key = kindKey(c.kind)
				}
				add(key, e.Message)
			}
		}()
	}
	wg.Wait()
	return out
}

// infosBuilder assembles Connect's ConfigInfos: one entry per declared key
// (first declaration wins), plus entries for undeclared keys with errors.
type infosBuilder struct {
	config  map[string]string
	set     specSet
	order   []string
	entries map[string]*ConfigInfo
	groups  []string
}

func newInfosBuilder(config map[string]string, set specSet) *infosBuilder {
	return &infosBuilder{config: config, set: set, entries: map[string]*ConfigInfo{}}
}

func (b *infosBuilder) addFields(fields []sdk.Field, component string) {
	for _, f := range fields {
		if _, ok := b.entries[f.Name]; ok {
			continue
		}
		def := configDef(f, len(b.order)+1, component)
		if !slices.Contains(b.groups, def.Group) {
			b.groups = append(b.groups, def.Group)
		}
		ci := &ConfigInfo{Definition: def, Value: ConfigValue{
			Name: f.Name, RecommendedValues: slices.Clone(f.Allowed), Errors: []string{}, Visible: true,
		}}
		if ci.Value.RecommendedValues == nil {
			ci.Value.RecommendedValues = []string{}
		}
		b.entries[f.Name] = ci
		b.order = append(b.order, f.Name)
	}
}

func (b *infosBuilder) addError(key, msg string) {
	ci, ok := b.entries[key]
	if !ok {
		def := ConfigDef{Name: key, Type: string(sdk.TypeString), Importance: string(sdk.Medium), Width: "NONE",
			DisplayName: key, Dependents: []string{}, Order: len(b.order) + 1, Group: "Common"}
		if f, found := b.set.lookup(key); found {
			def.Type, def.Documentation, def.Importance = string(f.Type), f.Doc, string(f.Importance)
		}
		ci = &ConfigInfo{Definition: def, Value: ConfigValue{Name: key, RecommendedValues: []string{}, Errors: []string{}, Visible: true}}
		b.entries[key] = ci
		b.order = append(b.order, key)
	}
	if !slices.Contains(ci.Value.Errors, msg) {
		ci.Value.Errors = append(ci.Value.Errors, msg)
	}
}

// build fills the values (secret ones stay null) and counts the errors.
func (b *infosBuilder) build(name string, secrets map[string]bool) ConfigInfos {
	infos := ConfigInfos{Name: name, Groups: b.groups, Configs: make([]ConfigInfo, 0, len(b.order))}
	if infos.Groups == nil {
		infos.Groups = []string{}
	}
	for _, key := range b.order {
		ci := *b.entries[key]
		if v, ok := b.config[key]; ok {
			ci.Value.Value = &v
		} else if ci.Definition.DefaultValue != nil {
			d := *ci.Definition.DefaultValue
			ci.Value.Value = &d
		}
		if secrets[key] || ci.Definition.Type == string(sdk.TypePassword) {
			ci.Value.Value = nil
		}
		infos.ErrorCount += len(ci.Value.Errors)
		infos.Configs = append(infos.Configs, ci)
	}
	return infos
}

// configDef is Connect's definition of a field.
func configDef(f sdk.Field, order int, component string) ConfigDef {
	d := ConfigDef{
		Name: f.Name, Type: string(f.Type), Required: f.Required, Importance: string(f.Importance),
		Documentation: f.Doc, Group: f.Group, Width: "NONE", DisplayName: f.Name, Dependents: []string{}, Order: order,
	}
	if d.Importance == "" {
		d.Importance = string(sdk.Medium)
	}
	if d.Group == "" {
		d.Group = "Common"
		if component != "" {
			d.Group = component
		}
	}
	if f.Prefix {
		d.Documentation = strings.TrimSpace(d.Documentation + " (every key starting with " + f.Name + " is accepted)")
	}
	if f.HasDefault {
		v := f.DefaultValue
		d.DefaultValue = &v
	}
	return d
}
