package cli

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/floehq/floe/host/rest"
	"github.com/floehq/floe/host/standalone"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/sdk"
)

type validateOpts struct {
	json bool
	log  *logFlags
}

func validateFlags(a *App) (*flag.FlagSet, *validateOpts) {
	fs := newFlagSet("validate")
	o := &validateOpts{}
	fs.BoolVar(&o.json, "json", false, "print Connect's ConfigInfos JSON (as PUT /connector-plugins/{p}/config/validate answers)")
	o.log = addLogFlags(fs, a)
	return fs, o
}

func validateCommand() *command {
	return &command{
		name:    "validate",
		summary: "check a connector config against floe's and its plugins' specs",
		usage:   "validate <worker.json> <connector.json> [--json]",
		help: `Validates a connector file exactly as the REST API's
PUT /connector-plugins/{class}/config/validate does, with the plugins of the
worker config's plugin.path: floe's own keys, every component's keys (each
plugin checks its own values), and keys nobody declares. Prints each key
with its problems and exits 1 if there are any. Nothing is started or
stored.`,
		flagSet: func(a *App) *flag.FlagSet { fs, _ := validateFlags(a); return fs },
		run:     (*App).runValidate,
	}
}

func (a *App) runValidate(ctx context.Context, args []string) error {
	fs, o := validateFlags(a)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := argCount(pos, 2, 2, "the worker config and the connector file (floe validate configs/worker.json configs/demo-datagen.json)"); err != nil {
		return err
	}
	if _, err := a.loggers(o.log); err != nil {
		return err
	}
	wc, err := loadWorkerConfig(pos[0])
	if err != nil {
		return err
	}
	logs, err := a.loggersWithDefault(o.log, wc.LogLevel)
	if err != nil {
		return err
	}
	c, err := standalone.LoadConnector(pos[1])
	if err != nil {
		return err
	}
	infos, err := a.validateConnector(ctx, wc, logs, c)
	if err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(a.Stdout, infos); err != nil {
			return err
		}
	} else if err := printValidation(a, c, infos); err != nil {
		return err
	}
	if infos.ErrorCount > 0 {
		return &exitError{code: 1, err: fmt.Errorf("connector %s (%s) has %d config error(s): fix the keys listed above", c.Name, pos[1], infos.ErrorCount)}
	}
	return nil
}

// validateConnector validates c with the worker's own validation, in a
// worker that holds nothing: its state lives in a temporary folder, so the
// real data dir's connectors are neither started nor touched. Plugins see
// floe.data.dir as the temporary folder while they validate.
func (a *App) validateConnector(ctx context.Context, wc worker.Config, logs *rest.Loggers, c standalone.Connector) (worker.ConfigInfos, error) {
	reg, err := a.scan(ctx, pluginSource{pluginPath: strings.Join(wc.PluginPath, ",")}, logs.Logger(logRegistry))
	if err != nil {
		return worker.ConfigInfos{}, err
	}
	tmp, err := os.MkdirTemp("", "floe-validate-")
	if err != nil {
		return worker.ConfigInfos{}, fmt.Errorf("validate: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			logs.Logger(logWorker).Warn("validate: the temporary data dir stays behind", "dir", tmp, "error", err)
		}
	}()
	vc := wc
	vc.DataDir = tmp
	w, err := worker.New(ctx, vc, worker.Deps{Plugins: worker.FromRegistry(reg), Logger: logs.Logger(logWorker)})
	if err != nil {
		return worker.ConfigInfos{}, fmt.Errorf("validate: %w", err)
	}
	defer func() { _ = w.Close(context.WithoutCancel(ctx)) }()
	class := c.Config["connector.class"]
	if class == "" {
		class = "iceberg"
	}
	return w.Validate(ctx, class, c.Config)
}

// printValidation prints the keys with errors, then the keys the file
// sets that are fine. Secret values are not shown.
func printValidation(a *App, c standalone.Connector, infos worker.ConfigInfos) error {
	p := newPrinter(a.Stdout)
	if infos.ErrorCount == 0 {
		p.printf("connector %s is valid\n", c.Name)
	} else {
		p.printf("connector %s: %d error(s)\n", c.Name, infos.ErrorCount)
	}
	for _, ci := range infos.Configs {
		for _, e := range ci.Value.Errors {
			p.printf("  ✗ %s%s: %s\n", ci.Value.Name, shownValue(ci), e)
		}
	}
	shown := map[string]bool{}
	for _, ci := range infos.Configs {
		shown[ci.Value.Name] = true
		if len(ci.Value.Errors) > 0 {
			continue
		}
		if _, set := c.Config[ci.Value.Name]; set {
			p.printf("  ✓ %s%s\n", ci.Value.Name, shownValue(ci))
		}
	}
	// Keys a prefix field accepts (kafka.*, iceberg.catalog.*) have no
	// entry of their own in the answer.
	for _, k := range slices.Sorted(maps.Keys(c.Config)) {
		if !shown[k] {
			p.printf("  ✓ %s = %q\n", k, sdk.RedactValue(k, c.Config[k]))
		}
	}
	return p.err
}

func shownValue(ci worker.ConfigInfo) string {
	switch {
	case ci.Value.Value == nil && ci.Definition.Type == "PASSWORD":
		return " = [hidden]"
	case ci.Value.Value == nil:
		return ""
	}
	return fmt.Sprintf(" = %q", sdk.RedactValue(ci.Value.Name, *ci.Value.Value))
}
