// Package cli is the floe command: its subcommands, their flags and what
// they print. host/cmd/floe only wires signals to [Run].
//
// # Commands
//
//	floe standalone <worker.json> [connector.json …] [--exit-when-done] [--progress]
//	floe plugins [list | describe <name>] [--worker worker.json | --plugin-path DIR,…] [--json]
//	floe validate <worker.json> <connector.json> [--json]
//	floe table describe <namespace.table> [--worker … | --connector … | --catalog-uri … --warehouse …] [--json]
//	floe maintain <connector.json> [--once] [--dry-run] [--force task,…]
//	floe version
//	floe help [command]
//
// Flags and arguments may come in any order; every command takes
// --log-level and --log-format (or FLOE_LOG_LEVEL and FLOE_LOG_FORMAT).
//
// # Exit codes
//
// 0 on success (and after a graceful shutdown on SIGINT or SIGTERM), 1
// when the command failed, 2 for a mistake on the command line, which is
// reported with the command's usage line. Every error names what it is
// about (file, line and column, key, connector, plugin) and says what to
// do next.
//
// # Logging
//
// The host logs with log/slog only: to stderr through named loggers
// ("floe.worker", "floe.rest", "floe.registry", …; see rest.Loggers),
// whose levels the REST API's /admin/loggers changes at run time. Plugin
// processes' lines arrive on the logger of the part of the host that
// started them (sdk/client adapts go-plugin's hclog to it), labelled once
// with connector=… and plugin=<component> (binary=<path> where go-plugin
// names the file); whole numbers print as integers, and raw librdkafka
// lines ("%4|…") at the level they carry.
//
// `floe version` and GET / show Version and Commit, which the Makefile
// sets with -ldflags -X.
//
// # Standalone
//
// `floe standalone` scans plugin.path, starts the worker
// (host/worker), creates the connectors of the files given, serves the
// REST API (host/rest) on the listeners, watches config.dir
// (host/standalone) and waits for a signal; then every connector makes its
// final checkpoint commit before floe exits. --progress draws one status
// line, in place on a terminal (the log clears and redraws it), as plain
// lines every 5 s otherwise.
package cli
