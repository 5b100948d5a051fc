// Package harness runs floe the way a user does, for end-to-end tests,
// benchmarks and the crash soak: the real bin/floe binary and the real
// plugin binaries as OS processes, against the real services
// e2e/services/up starts (Kafka, an Apicurio Schema Registry, PostgreSQL)
// and read back by independent engines (PyIceberg, DuckDB).
//
// # Environment
//
// [LoadEnv] reads what e2e/services/up writes to its env file
// (FLOE_KAFKA_BOOTSTRAP, FLOE_SCHEMA_REGISTRY_URL, FLOE_POSTGRES_URL,
// FLOE_PYTHON, FLOE_READ_TABLE, FLOE_KAFKA_SASL_*) and FLOE_BIN_DIR (default
// <repo>/bin, built by make build). [Require] skips a test whose services
// or binaries are missing, saying how to get them, and fails it instead
// when FLOE_REQUIRE_SERVICES=1 (make test sets it, so nothing passes there
// by skipping).
//
// # A floe process
//
// [StartFloe] writes a worker config into a fresh run folder (data.dir,
// a free REST port, plugin.path = FLOE_BIN_DIR/plugins, optionally a
// watched config.dir), starts `floe standalone` with the given connector
// files, sends its output to a log file and waits for GET /health. The
// returned [Floe] has a REST client for Kafka Connect's API ([Client]),
// [Floe.WaitFor], [Floe.Stop] (SIGTERM, expects exit 0), [Floe.Kill]
// (SIGKILL), [Floe.KillPlugin] (SIGKILL one plugin process) and
// [Floe.Restart], [Floe.Wait] for runs that end by themselves
// (--exit-when-done). The run folder and the log are deleted when the test
// passes and kept when it fails (or with FLOE_E2E_KEEP=1); a failing test
// prints the log's path and its last lines.
//
// Every process a Floe starts, floe's plugin processes included, carries
// a marker in its environment, so the harness finds them wherever they
// were re-parented. Cleanup kills whatever is left and fails the test if a
// plugin process outlived the host: no test leaves a process behind. floe
// runs with the parent-death signal set to SIGKILL, so a test binary that
// dies (a go test timeout) takes floe with it, and the plugins follow.
// Cleanup also fails the test when floe's log (plugin output included)
// shows a Go panic, a fatal runtime error or a data race, even one floe
// survived by restarting a plugin.
//
// [RunFloe] runs one-shot commands (floe validate, floe plugins, floe
// table describe) and returns their output and exit code.
//
// # What happens to plugins when the host dies
//
// Plugins are children of the floe process. A SIGKILL of the host does not
// reach them (they are not in a process group of their own and get no
// signal); they are re-parented, and the SDK's Serve notices that its
// parent changed (it polls getppid every second), closes its tasks and
// exits 1. [Floe.Kill] checks this: it waits up to [PluginOrphanTimeout]
// for every plugin process to be gone and fails the test naming the
// survivors otherwise.
//
// # Kafka, registry, tables
//
// [CreateTopic], [Produce], [Consume], [EndOffsets], [RegisterSchema] and
// [SetCompatibility] wrap the kafka plugin's kafkatest package and
// confluent-kafka-go. [ReadTable] reads a table with PyIceberg or DuckDB
// through e2e/readers/read_table.py and decodes its JSON (integers as
// json.Number, so sums beyond 2^53 stay exact); [LoadMetadata] parses the
// table's metadata file for what the readers do not print (required
// flags, snapshot summaries, floe's committed frontier); [HashSum]
// computes read_table.py's checksum of non-integer columns in Go, and
// [DatagenFor] regenerates a datagen connector's records with the plugin's
// own generator, so tests compare what engines read with values they
// computed themselves.
//
// # Crash tests
//
// sdk.CrashPoint makes a floe process kill itself with SIGKILL at a named
// moment (FLOE_CRASHPOINT=name:N). [CrashEnv] arms one for floe and its
// plugins, with a crash file that records the crash and keeps the point
// from firing twice; [Floe.SetEnv] sets it for the next start only.
// [Floe.WaitCrash] waits for the crash file and the crashed process's
// end (failing the test if the point never fires), [Floe.WaitKilled]
// checks that the host died by SIGKILL and its plugins followed;
// [Floe.RestartNoWait] starts an armed run that may die before GET
// /health answers. [Floe.KillHost] kills the host without waiting for its
// plugins, for a restart at once while they still run, and
// [Floe.WaitGone] checks that they ended.
//
// [StartBroker] starts a private Kafka broker with e2e/services/up in a
// state folder of its own, so a test may stop it ([Broker.Stop], SIGKILL
// or SIGTERM) and start it again ([Broker.Start]: the command line,
// working folder and environment up gave it, read from /proc before the
// stop) without disturbing the shared services; the env file of its
// state folder is kept current so e2e/services/down still stops it.
// [StartRegistry] does the same for a private Apicurio Registry, whose
// storage is in memory: [Registry.Start] brings it back empty, as a
// registry that lost its storage.
//
// [StartTCPProxy] puts a proxy between floe and a shared service (the
// catalog, the registry, the object store): [TCPProxy.Down] cuts floe
// off from it, as if it stopped, while the readers and other tests
// still reach it; [TCPProxy.Up] brings it back.
package harness
