package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

const intro = `floe turns Kafka topics into Apache Iceberg tables, exactly once.`

const quickStart = `Quick start (embedded defaults: datagen source, SQLite catalog, local warehouse):
  make build
  bin/floe standalone configs/worker.json configs/demo-datagen.json --exit-when-done --progress
  bin/floe table describe demo.orders --worker configs/worker.json`

// printUsage prints the command overview.
func (a *App) printUsage(w io.Writer) error {
	p := newPrinter(w)
	p.printf("%s\n\nusage: floe <command> [arguments]\n\ncommands:\n", intro)
	tw := p.columns()
	for _, c := range a.commands() {
		tw.printf("  %s\t%s\n", c.name, c.summary)
	}
	tw.end()
	p.printf("\nEvery command takes --log-level (TRACE, DEBUG, INFO, WARN, ERROR, OFF) and --log-format (text, json).\n\n%s\n\nRun `floe help <command>` for a command's arguments.\n", quickStart)
	return p.err
}

// printCommandHelp prints one command's usage, help and flags.
func (a *App) printCommandHelp(w io.Writer, c *command) error {
	p := newPrinter(w)
	p.printf("usage: floe %s\n\n%s\n", c.usage, strings.TrimSpace(c.help))
	if fs := c.flags(a); fs != nil {
		var lines []string
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if name != "" {
				line += " " + name
			}
			line += "\t" + usage
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				line += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			lines = append(lines, line)
		})
		if len(lines) > 0 {
			p.printf("\nflags:\n")
			tw := p.columns()
			for _, l := range lines {
				tw.println(l)
			}
			tw.end()
		}
	}
	return p.err
}

// flags returns the command's flag set, for help, by running its flag
// declaration with --help.
func (c *command) flags(a *App) *flag.FlagSet {
	if c.flagSet == nil {
		return nil
	}
	return c.flagSet(a)
}

func helpCommand() *command {
	return &command{
		name:    "help",
		summary: "show help for a command",
		usage:   "help [command]",
		help:    "Prints the command overview, or one command's usage and flags.",
		run: func(a *App, ctx context.Context, args []string) error {
			switch len(args) {
			case 0:
				return a.printUsage(a.Stdout)
			case 1:
				c := a.lookup(args[0])
				if c == nil {
					return usagef("unknown command %q%s", args[0], suggest(args[0], a.commandNames()))
				}
				return a.printCommandHelp(a.Stdout, c)
			}
			return usagef("help takes one command name")
		},
	}
}
