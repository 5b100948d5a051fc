package harness

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Registry is a private Apicurio Registry that one test starts with
// e2e/services/up (--no-kafka --no-postgres --no-python --no-lake) in a
// state folder of its own, so that it may stop and start the registry
// without disturbing the other tests and users of the shared one. Its
// storage is in memory: a registry started again ([Registry.Start]) has
// forgotten every schema, as a registry restarted with empty storage
// has. Its log is Dir/logs/schema-registry.log.
type Registry struct {
	// Dir is the services state folder (FLOE_SERVICES_DIR of this
	// registry).
	Dir string
	// URL is the Confluent-compatible API (…/apis/ccompat/v7).
	URL string
	// LogFile is the registry's log.
	LogFile string

	svc *service
}

// StartRegistry starts a private registry (10–30 s: a JVM start) and stops
// it when the test ends. Its state folder is kept when the test failed.
func StartRegistry(t testing.TB, env Env) *Registry {
	t.Helper()
	start := time.Now()
	svc, vars := upService(t, env, "private registry", "FLOE_SCHEMA_REGISTRY_PID", "schema-registry.log",
		"--no-kafka", "--no-postgres", "--no-python", "--no-lake")
	r := &Registry{Dir: svc.dir, URL: vars["FLOE_SCHEMA_REGISTRY_URL"], LogFile: svc.logFile, svc: svc}
	if r.URL == "" {
		t.Fatalf("harness: private registry: env file of %s has no FLOE_SCHEMA_REGISTRY_URL", r.Dir)
	}
	t.Logf("harness: private registry (pid %d) at %s in %s", svc.pid, r.URL, time.Since(start).Round(time.Millisecond))
	return r
}

// Env returns env with this registry as the Schema Registry.
func (r *Registry) Env(env Env) Env {
	env.SchemaRegistryURL = r.URL
	return env
}

// PID is the registry's pid.
func (r *Registry) PID() int { return r.svc.pid }

// Stop sends sig to the registry and waits until it is gone (SIGKILL
// after 60 s). Its schemas are lost.
func (r *Registry) Stop(sig syscall.Signal) {
	r.svc.t.Helper()
	r.svc.stop(sig)
}

// Start starts the stopped registry again, on the same ports and with
// empty storage, and returns once its Confluent-compatible API answers
// (the readiness check of e2e/services/up).
func (r *Registry) Start() {
	r.svc.t.Helper()
	r.svc.start(func([]byte) bool { return r.answers() })
}

// answers reports whether GET /subjects answers 200.
func (r *Registry) answers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(r.URL, "/")+"/subjects", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
