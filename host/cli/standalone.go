package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/floehq/floe/host/rest"
	"github.com/floehq/floe/host/standalone"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/host/worker"
)

// doneInterval is how often --exit-when-done looks at the connectors.
const doneInterval = 250 * time.Millisecond

type standaloneOpts struct {
	exitWhenDone bool
	progress     boolFlag
	log          *logFlags
}

func standaloneFlags(a *App) (*flag.FlagSet, *standaloneOpts) {
	fs := newFlagSet("standalone")
	o := &standaloneOpts{}
	fs.BoolVar(&o.exitWhenDone, "exit-when-done", false, "exit 0 once every connector's sources reached the end of their input and committed it; non-zero, with the trace, if a task fails")
	fs.Var(&o.progress, "progress", "show one live status line (records/s, records, commits, files, checkpoint, elapsed) (default: on when stdout is a terminal)")
	o.log = addLogFlags(fs, a)
	return fs, o
}

func standaloneCommand() *command {
	return &command{
		name:    "standalone",
		summary: "run a worker: connectors, REST API, watched config folder",
		usage:   "standalone <worker.json> [connector.json …] [--exit-when-done] [--progress]",
		help: `Runs one floe worker in this process until SIGINT or SIGTERM, then shuts
down gracefully: each connector makes its final checkpoint commit, and
floe exits 0.

The worker config (listeners, plugin.path, data.dir, config.dir) is a flat
JSON object of strings. Each connector file is Kafka Connect's JSON,
{"name": "orders", "config": {"connector.class": "iceberg", …}}, or a
flat object of config keys; a connector that exists already (from an
earlier run) gets the file's config. *.json files in config.dir are
watched: dropping one in creates its connector, editing it updates it,
removing it deletes it.

The REST API answers Kafka Connect's paths on the listeners (default
http://127.0.0.1:8083): curl localhost:8083/connectors?expand=status`,
		flagSet: func(a *App) *flag.FlagSet { fs, _ := standaloneFlags(a); return fs },
		run:     (*App).runStandalone,
	}
}

// runStandalone runs the worker until ctx (the signal) ends, then shuts it
// down. The worker and the progress line outlive ctx on purpose: the
// final commits and the last progress line come after the signal.
//
//nolint:contextcheck // see above
func (a *App) runStandalone(ctx context.Context, args []string) error {
	fs, o := standaloneFlags(a)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := argCount(pos, 1, -1, "the worker config file (for example configs/worker.json)"); err != nil {
		return err
	}
	if _, err := a.loggers(o.log); err != nil {
		return err // a bad flag is a usage error, before any file is read
	}
	wc, err := loadWorkerConfig(pos[0])
	if err != nil {
		return err
	}
	tty := a.terminal(a.Stdout)
	progress := o.progress.value(tty)
	var live *liveLine
	logOut := a.Stderr
	if progress && tty {
		live = &liveLine{out: a.Stdout}
		logOut = live.logWriter(a.Stderr)
	}
	logs, err := a.loggersTo(logOut, o.log, wc.LogLevel)
	if err != nil {
		return err
	}
	log := logs.Logger(logCLI)
	start := time.Now()
	// Read every connector file before starting anything: a typo should
	// not cost a plugin scan and a worker start.
	var files []standalone.Connector
	for _, path := range pos[1:] {
		c, err := standalone.LoadConnector(path)
		if err != nil {
			return err
		}
		files = append(files, c)
	}

	// One worker per data dir, and the REST port bound, before any
	// stored connector starts: a second worker on the same data dir or
	// port fails here, having started nothing.
	lock, err := store.LockDataDir(wc.DataDir)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Unlock() }()
	tlsConfig, auth, err := restSecurity(wc)
	if err != nil {
		return err
	}
	listeners, err := rest.Listen(wc.Listeners, tlsConfig)
	if err != nil {
		return err
	}
	// From here on the REST API answers, 503 until the stored connectors
	// and the files are loaded; it and the watched folder run until
	// runCtx ends.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	svc := a.serveREST(runCtx, listeners, auth, logs)
	stopServices := func() { stopRun(); svc.wait() }

	// The worker's context outlives ctx (the signal): shutdown needs it
	// to make the final commits.
	wctx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorker()
	w, err := a.startWorker(wctx, wc, logs)
	if err != nil {
		stopServices()
		return err
	}
	shutdown := func() error {
		log.Info("shutting down: connectors make their final checkpoint commits")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wc.ShutdownTimeout)
		defer cancel()
		err := w.Close(sctx)
		stopWorker()
		if err != nil {
			return fmt.Errorf("shutdown: %w (what was not committed is read again from the last commit at the next start; raise task.shutdown.graceful.timeout.ms if the final commits need longer)", err)
		}
		log.Info("worker stopped", "elapsed", time.Since(start).Round(time.Millisecond))
		return nil
	}

	for i, c := range files {
		if err := applyConnector(ctx, w, c); err != nil {
			stopServices()
			_ = shutdown()
			return fmt.Errorf("%s: %w", pos[1+i], err)
		}
		log.Info("connector started from file", "connector", c.Name, "file", pos[1+i])
	}

	// failed reports the REST API or the watched folder failing.
	failed := svc.open(runCtx, wc, w, nil, auth, logs)

	stopProgress := func() {}
	if progress {
		// The progress line runs until stopProgress, after runCtx ended.
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		progressDone := make(chan struct{})
		go func() {
			defer close(progressDone)
			showProgress(pctx, a.Stdout, live, w, start)
		}()
		stopProgress = func() { cancel(); <-progressDone }
	}

	var runErr error
	if o.exitWhenDone {
		runErr = waitDone(runCtx, w, failed)
	} else {
		select {
		case <-runCtx.Done():
		case runErr = <-failed:
		}
	}
	stopProgress() // its last line shows the totals before shutdown
	stopServices()
	if err := shutdown(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	return nil
}

// services are the REST API and the watched folder of a running worker.
type services struct {
	gate *rest.Gate
	errc chan error
	bg   sync.WaitGroup
}

// serveREST serves the REST API on the listeners (bound by the caller)
// until ctx ends. Until [services.open] it answers 503 (rest.Gate): a
// client that reaches the port while the worker loads its stored
// connectors gets an answer saying so, not a hung connection.
func (a *App) serveREST(ctx context.Context, listeners []net.Listener, auth *rest.Auth, logs *rest.Loggers) *services {
	s := &services{gate: rest.NewGate(), errc: make(chan error, 2)}
	a.serveProfiles(ctx, logs.Logger(logCLI))
	for _, l := range listeners {
		logs.Logger(logCLI).Info("REST API listening", "url", rest.URL(l), "authentication", auth.Enabled())
		if ta, ok := l.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() && !auth.Enabled() {
			logs.Logger(logCLI).Warn("the REST API listens beyond this host without authentication: whoever reaches it controls the worker; set "+
				worker.KeyRESTBasicFile+" or "+worker.KeyRESTBearerFile+" (docs/security.md)", "url", rest.URL(l))
		}
	}
	s.bg.Go(func() {
		if err := rest.Serve(ctx, s.gate, listeners, logs.Logger(logREST)); err != nil {
			s.errc <- err
		}
	})
	return s
}

// open runs the watched folder when config.dir is set, applies its files,
// and then lets the REST API answer from w (router forwards writes in
// distributed mode, nil in standalone). The folder runs until ctx ends;
// the channel receives the error of the API or the folder failing.
func (s *services) open(ctx context.Context, wc worker.Config, w runningWorker, router rest.Router, auth *rest.Auth, logs *rest.Loggers) <-chan error {
	if wc.ConfigDir != "" {
		scanned := make(chan struct{})
		var once sync.Once
		s.bg.Go(func() {
			err := standalone.Watch(ctx, wc.ConfigDir, w, standalone.Options{
				Logger:  logs.Logger(logStandalone),
				Scanned: func() { once.Do(func() { close(scanned) }) },
			})
			once.Do(func() { close(scanned) })
			if err != nil {
				s.errc <- err
			}
		})
		<-scanned
	}
	s.gate.Open(rest.New(rest.Options{Worker: w, Metrics: w.Metrics(), Loggers: logs, Logger: logs.Logger(logREST), Auth: auth, Router: router}))
	return s.errc
}

// wait returns once the REST API and the watched folder stopped (after
// their ctx ended).
func (s *services) wait() { s.bg.Wait() }

// waitDone waits until every connector finished its input, a connector
// fails, a background part fails, or ctx ends (a signal: not an error).
func waitDone(ctx context.Context, w worker.API, failed <-chan error) error {
	tick := time.NewTicker(doneInterval)
	defer tick.Stop()
	for {
		done, err := doneCheck(ctx, w)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case <-tick.C:
		}
	}
}

// applyConnector creates a connector from a file, or gives an existing
// one (kept in the data dir from an earlier run) the file's config.
func applyConnector(ctx context.Context, w worker.API, c standalone.Connector) error {
	_, err := w.CreateConnector(ctx, c.Name, c.Config, c.InitialState)
	if errors.Is(err, worker.ErrExists) {
		_, _, err = w.PutConnectorConfig(ctx, c.Name, c.Config)
	}
	var ve *worker.ValidationError
	if errors.As(err, &ve) {
		return fmt.Errorf("connector %s is not valid:%s", c.Name, configErrors(ve.Infos))
	}
	if err != nil {
		return fmt.Errorf("connector %s: %w", c.Name, err)
	}
	return nil
}

// configErrors lists a validation answer's errors, one key a line.
func configErrors(infos worker.ConfigInfos) string {
	var b strings.Builder
	for _, c := range infos.Configs {
		for _, m := range c.Value.Errors {
			fmt.Fprintf(&b, "\n  %s: %s", c.Value.Name, m)
		}
	}
	if b.Len() == 0 {
		return " (no key named; see the log)"
	}
	return b.String()
}

// boolFlag is a bool flag that remembers whether it was given.
type boolFlag struct {
	set, v bool
}

func (b *boolFlag) String() string {
	if b == nil || !b.set {
		return ""
	}
	return fmt.Sprint(b.v)
}

func (b *boolFlag) Set(s string) error {
	v, err := parseBool(s)
	if err != nil {
		return err
	}
	b.set, b.v = true, v
	return nil
}

// IsBoolFlag lets --progress stand alone.
func (b *boolFlag) IsBoolFlag() bool { return true }

// value is the flag's value, or def when not given.
func (b *boolFlag) value(def bool) bool {
	if b.set {
		return b.v
	}
	return def
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "t", "true", "yes", "on":
		return true, nil
	case "0", "f", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

// terminal reports whether w is an interactive terminal.
func (a *App) terminal(w io.Writer) bool {
	return a.Terminal != nil && a.Terminal(w)
}

// restSecurity reads the REST API's TLS certificate and credentials
// files named by the worker config. Errors name the key and the file.
func restSecurity(wc worker.Config) (*tls.Config, *rest.Auth, error) {
	var tlsConfig *tls.Config
	if wc.TLSCert != "" || wc.TLSKey != "" {
		c, err := rest.LoadTLS(wc.TLSCert, wc.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("worker config: %w", err)
		}
		tlsConfig = c
	}
	auth := &rest.Auth{}
	if wc.RESTBasicFile != "" {
		if err := auth.LoadBasicCredentials(wc.RESTBasicFile); err != nil {
			return nil, nil, fmt.Errorf("worker config %s: %w", worker.KeyRESTBasicFile, err)
		}
	}
	if wc.RESTBearerFile != "" {
		if err := auth.LoadBearerTokens(wc.RESTBearerFile); err != nil {
			return nil, nil, fmt.Errorf("worker config %s: %w", worker.KeyRESTBearerFile, err)
		}
	}
	return tlsConfig, auth, nil
}
