package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/floehq/floe/host/registry"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk"
)

// pluginSource is how a command finds plugins: a worker config's
// plugin.path and data dir, or --plugin-path.
type pluginSource struct {
	worker     string
	pluginPath string
	cacheDir   string
}

func (ps *pluginSource) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&ps.worker, "worker", "", "worker config whose plugin.path (and data.dir) to use")
	fs.StringVar(&ps.pluginPath, "plugin-path", "", "comma-separated folders holding floe-plugin-* binaries (default "+worker.DefaultPluginPath+")")
}

// scan finds the plugins, printing every problem and going on. When no
// plugin is usable at all it returns the (empty) registry and an error
// saying where it looked and what to do.
func (a *App) scan(ctx context.Context, ps pluginSource, logs *slog.Logger) (*registry.Registry, error) {
	dirs, cacheDir := []string{worker.DefaultPluginPath}, ps.cacheDir
	if ps.worker != "" {
		wc, err := loadWorkerConfig(ps.worker)
		if err != nil {
			return nil, err
		}
		dirs, cacheDir = wc.PluginPath, pluginCacheDir(wc)
	}
	if ps.pluginPath != "" {
		dirs = splitList(ps.pluginPath, ",")
	}
	// The registry logs each problem too; printProblems says it once,
	// with what happens next, whatever the log level.
	reg, problems := registry.Scan(ctx, dirs, cacheDir, slog.New(dropMessage{h: logs.Handler(), msg: registryProblem}))
	a.printProblems(problems)
	if len(reg.Components()) == 0 {
		return reg, fmt.Errorf("no plugins found in %s: run `make build` to build the plugins into bin/plugins, or point --plugin-path (or the worker config's plugin.path) at the folder holding the floe-plugin-* binaries", strings.Join(dirs, ", "))
	}
	return reg, nil
}

// registryProblem is the message registry.Scan logs each problem with
// (TestPluginsList checks that a problem is shown once).
const registryProblem = "plugin problem"

// dropMessage is a slog.Handler that leaves out the records whose message
// is msg.
type dropMessage struct {
	h   slog.Handler
	msg string
}

func (d dropMessage) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d dropMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == d.msg {
		return nil
	}
	return d.h.Handle(ctx, r)
}

func (d dropMessage) WithAttrs(as []slog.Attr) slog.Handler {
	return dropMessage{h: d.h.WithAttrs(as), msg: d.msg}
}

func (d dropMessage) WithGroup(name string) slog.Handler {
	return dropMessage{h: d.h.WithGroup(name), msg: d.msg}
}

// printProblems prints each plugin file a scan could not use.
func (a *App) printProblems(problems []registry.Problem) {
	for _, p := range problems {
		warnf(a.Stderr, "floe: plugin problem: %v (skipped; the other plugins still work)\n", p)
	}
}

type pluginsOpts struct {
	src  pluginSource
	kind string
	json bool
	log  *logFlags
}

func pluginsFlags(a *App) (*flag.FlagSet, *pluginsOpts) {
	fs := newFlagSet("plugins")
	o := &pluginsOpts{}
	o.src.addFlags(fs)
	fs.StringVar(&o.kind, "kind", "", "describe only the component of this kind: source, partitioner, sink or maintenance")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
	o.log = addLogFlags(fs, a)
	return fs, o
}

func pluginsCommand() *command {
	return &command{
		name:    "plugins",
		summary: "list the plugins in plugin.path, or describe one's config keys",
		usage:   "plugins [list | describe <name>] [--worker worker.json | --plugin-path DIR,…] [--json]",
		help: `Lists every component the plugin binaries in plugin.path declare: kind,
name (and aliases), version and binary. A file that is not a usable plugin
is reported and skipped.

"floe plugins describe <name>" prints a component's config keys: type,
default, whether required, allowed values and documentation, from the
same specs the REST API's /connector-plugins/<name>/config answers.
"floe plugins describe host" prints the keys floe itself owns (tasks.max,
commit.interval.ms, errors.*, …).`,
		flagSet: func(a *App) *flag.FlagSet { fs, _ := pluginsFlags(a); return fs },
		run:     (*App).runPlugins,
	}
}

func (a *App) runPlugins(ctx context.Context, args []string) error {
	fs, o := pluginsFlags(a)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	logs, err := a.loggers(o.log)
	if err != nil {
		return err
	}
	sub := "list"
	if len(pos) > 0 {
		sub, pos = pos[0], pos[1:]
	}
	switch sub {
	case "list":
		if err := argCount(pos, 0, 0, ""); err != nil {
			return err
		}
	case "describe":
		if err := argCount(pos, 1, 1, "the component name (see `floe plugins`)"); err != nil {
			return err
		}
		if pos[0] == "host" {
			return a.describeHost(o.json)
		}
	default:
		return usagef("unknown subcommand %q: use list or describe <name>", sub)
	}
	if o.kind != "" && !slices.Contains(sdk.AllKinds(), sdk.Kind(o.kind)) {
		return usagef("--kind %q: use source, partitioner, sink or maintenance", o.kind)
	}
	reg, err := a.scan(ctx, o.src, logs.Logger(logRegistry))
	if err != nil {
		return err
	}
	if sub == "list" {
		return a.listPlugins(reg.Components(), o.json)
	}
	return a.describePlugin(reg.Components(), pos[0], sdk.Kind(o.kind), o.json)
}

// PluginListing is one line of `floe plugins --json`.
type PluginListing struct {
	Kind       sdk.Kind `json:"kind"`
	Name       string   `json:"name"`
	Aliases    []string `json:"aliases"`
	Version    string   `json:"version"`
	Summary    string   `json:"summary"`
	Binary     string   `json:"binary"`
	SDKVersion string   `json:"sdk_version"`
}

func listing(e registry.Entry) PluginListing {
	aliases := e.Component.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	return PluginListing{Kind: e.Component.Kind, Name: e.Component.Name, Aliases: aliases, Version: e.Component.Version,
		Summary: e.Component.Summary, Binary: e.Binary, SDKVersion: e.Component.SDKVersion}
}

func (a *App) listPlugins(entries []registry.Entry, asJSON bool) error {
	if asJSON {
		out := make([]PluginListing, 0, len(entries))
		for _, e := range entries {
			out = append(out, listing(e))
		}
		return writeJSON(a.Stdout, out)
	}
	p := newPrinter(a.Stdout)
	tw := p.columns()
	tw.println("KIND\tNAME\tVERSION\tBINARY")
	for _, e := range entries {
		name := e.Component.Name
		if len(e.Component.Aliases) > 0 {
			name += " (" + strings.Join(e.Component.Aliases, ", ") + ")"
		}
		tw.printf("%s\t%s\t%s\t%s\n", e.Component.Kind, name, e.Component.Version, e.Binary)
	}
	tw.end()
	p.printf("\n`floe plugins describe <name>` lists a component's config keys.\n")
	return p.err
}

// PluginDescription is `floe plugins describe --json`.
type PluginDescription struct {
	PluginListing
	Keys []KeyDescription `json:"keys"`
}

// KeyDescription is one config key of a component.
type KeyDescription struct {
	Name     string   `json:"name"`
	Type     sdk.Type `json:"type"`
	Default  *string  `json:"default"`
	Required bool     `json:"required"`
	Secret   bool     `json:"secret"`
	Prefix   bool     `json:"prefix"`
	Allowed  []string `json:"allowed,omitempty"`
	Group    string   `json:"group,omitempty"`
	Example  string   `json:"example,omitempty"`
	Doc      string   `json:"doc"`
}

func keys(fields []sdk.Field) []KeyDescription {
	out := make([]KeyDescription, 0, len(fields))
	for _, f := range fields {
		k := KeyDescription{Name: f.Name, Type: f.Type, Required: f.Required, Secret: f.Secret || f.Type == sdk.TypePassword,
			Prefix: f.Prefix, Allowed: f.Allowed, Group: f.Group, Example: f.Example, Doc: f.Doc}
		if f.HasDefault {
			d := f.DefaultValue
			k.Default = &d
		}
		out = append(out, k)
	}
	return out
}

func (a *App) describePlugin(entries []registry.Entry, name string, kind sdk.Kind, asJSON bool) error {
	var found []registry.Entry
	var names []string
	for _, e := range entries {
		c := e.Component
		names = append(names, c.Name)
		if (c.Name == name || slices.Contains(c.Aliases, name)) && (kind == "" || c.Kind == kind) {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("no plugin component named %q%s: run `floe plugins` for the list (or `floe plugins describe host` for floe's own keys)", name, suggest(name, names))
	}
	if asJSON {
		out := make([]PluginDescription, 0, len(found))
		for _, e := range found {
			out = append(out, PluginDescription{PluginListing: listing(e), Keys: keys(e.Component.Fields)})
		}
		return writeJSON(a.Stdout, out)
	}
	p := newPrinter(a.Stdout)
	for i, e := range found {
		if i > 0 {
			p.println()
		}
		c := e.Component
		p.printf("%s %s %s (%s)\n", c.Kind, c.Name, c.Version, e.Binary)
		if len(c.Aliases) > 0 {
			p.printf("also known as %s\n", strings.Join(c.Aliases, ", "))
		}
		if c.Summary != "" {
			p.printf("%s\n", c.Summary)
		}
		printKeys(p, keys(c.Fields))
	}
	return p.err
}

func (a *App) describeHost(asJSON bool) error {
	k := keys(runtime.HostSpec().Fields())
	if asJSON {
		return writeJSON(a.Stdout, PluginDescription{PluginListing: PluginListing{Name: "host", Aliases: []string{}, Summary: "keys floe itself owns, valid in every connector config"}, Keys: k})
	}
	p := newPrinter(a.Stdout)
	p.printf("floe host keys, valid in every connector config\n")
	printKeys(p, k)
	return p.err
}

// printKeys prints each key as a heading line and its documentation
// indented below it.
func printKeys(p *printer, ks []KeyDescription) {
	if len(ks) == 0 {
		p.printf("\nno config keys\n")
		return
	}
	p.printf("\nconfig keys:\n")
	for _, k := range ks {
		var attrs []string
		attrs = append(attrs, string(k.Type))
		switch {
		case k.Required:
			attrs = append(attrs, "required")
		case k.Default != nil && *k.Default != "":
			attrs = append(attrs, fmt.Sprintf("default %q", *k.Default))
		default:
			attrs = append(attrs, "optional")
		}
		if k.Secret {
			attrs = append(attrs, "secret")
		}
		if len(k.Allowed) > 0 {
			attrs = append(attrs, "one of "+strings.Join(k.Allowed, ", "))
		}
		name := k.Name
		if k.Prefix {
			name += "*"
			attrs = append(attrs, "any key with this prefix")
		}
		p.printf("\n  %s  (%s)\n", name, strings.Join(attrs, "; "))
		for _, line := range wrap(k.Doc, 72) {
			p.printf("      %s\n", line)
		}
		if k.Example != "" {
			p.printf("      example: %s\n", k.Example)
		}
	}
}

// wrap breaks text into lines of at most width characters.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
