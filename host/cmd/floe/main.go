// Command floe is the floe host: `floe standalone worker.json
// connector.json` runs a worker; `floe help` lists the other commands.
//
// main only wires the process to package cli: signals, then cli.Run.
// Logging is configured by cli from --log-level and --log-format (or
// FLOE_LOG_LEVEL and FLOE_LOG_FORMAT), so every command logs alike.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/floehq/floe/host/cli"
	"github.com/floehq/floe/host/cluster"
	_ "github.com/floehq/floe/lake/backends" // rest, glue, hive, hadoop catalogs and object stores for the table commands
)

func main() {
	if os.Getenv(cluster.DescriberEnv) == "1" {
		// A worker's child that describes its cluster's group (librdkafka
		// may abort in that call; see cluster.DescriberEnv).
		os.Exit(cluster.ServeDescriber(os.Stdin, os.Stdout, os.Stderr))
	}
	// The first SIGINT or SIGTERM ends ctx: the worker shuts down
	// gracefully. After that the default handling is back, so a second
	// Ctrl-C ends floe at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
