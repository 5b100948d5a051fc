package sdk

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Probe is a check of a config against the systems it names: does the
// registry answer, can the subject's schema evolve the existing table.
// Declare it with [Spec.WithProbe].
type Probe func(ctx context.Context, cfg Config) error

// MaxProbeTime bounds a component's probes together when the host's
// deadline is further away (or absent).
const MaxProbeTime = 30 * time.Second

// WithProbe returns the spec with a probe added: a check that may reach
// other systems (a registry, a catalog, a broker), which [Spec.WithCheck]
// must not. Probes run only for the REST API's config/validate (and
// `floe validate`), never before Open or on any other path, and only once
// the fields and the whole-config checks all passed.
//
// fn gets the config with the spec's defaults applied and a ctx whose
// deadline comes a little before the host's (at most [MaxProbeTime]
// away): return promptly when it ends. The error conventions are
// WithCheck's: nil when everything is fine, [KeyError] to put a problem
// under the key the user must change, [errors.Join] of several. Say what
// was reached and what failed ("schema registry http://…: timeout after
// 10s"). Skip quietly what cannot be known before data flows.
//
// A component's probes run one after the other, in the order added. One
// that does not return when its ctx ends is reported as a problem of the
// config as a whole; its goroutine is left to finish on its own.
func (s Spec) WithProbe(fn Probe) Spec {
	s.probes = append(slices.Clip(s.probes), fn)
	return s
}

// HasProbes reports whether the spec declares any probe.
func (s Spec) HasProbes() bool { return len(s.probes) > 0 }

// Probe runs the spec's probes ([Spec.WithProbe]) on raw with the spec's
// defaults applied, and returns their problems. It does not check the
// fields: call it after [Spec.Validate] found nothing. A probe's panic is
// a problem of the config as a whole, not a crash.
func (s Spec) Probe(ctx context.Context, raw map[string]string) []ConfigError {
	if len(s.probes) == 0 {
		return nil
	}
	ctx, cancel := probeContext(ctx)
	defer cancel()
	cfg := s.Config(raw)
	done := make(chan []ConfigError, 1)
	go func() {
		var errs []ConfigError
		for _, p := range s.probes {
			errs = append(errs, configErrors(runProbe(ctx, p, cfg))...)
		}
		done <- errs
	}()
	select {
	case errs := <-done:
		return errs
	case <-ctx.Done():
	}
	// Give a probe that honours ctx a moment to say what it was waiting for.
	select {
	case errs := <-done:
		return errs
	case <-time.After(probeGrace):
	}
	return []ConfigError{{Message: fmt.Sprintf("the checks against other systems did not finish in time (%v): a probe did not return when its context ended", context.Cause(ctx))}}
}

// probeGrace is how long Probe waits past the probes' deadline for them
// to return with their own error.
const probeGrace = 50 * time.Millisecond

// probeContext ends a little before ctx's deadline, so the answer reaches
// the host in time: a fifth of the time left, between 5 ms and 1 s (less
// probeGrace), and at most MaxProbeTime from now.
func probeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := time.Now().Add(MaxProbeTime)
	if dl, ok := ctx.Deadline(); ok {
		margin := min(max(time.Until(dl)/5, 5*time.Millisecond), time.Second) + probeGrace
		if d := dl.Add(-margin); d.Before(limit) {
			limit = d
		}
	}
	return context.WithDeadline(ctx, limit)
}

// runProbe runs one probe, turning a panic into an error.
func runProbe(ctx context.Context, p Probe, cfg Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a probe panicked: %v", r)
		}
	}()
	return p(ctx, cfg)
}
