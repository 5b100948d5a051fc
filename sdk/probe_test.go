package sdk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// A spec's probes run only when the host asks (config/validate), only
// once the fields and checks passed, with the config's defaults and a ctx
// that ends before the host's deadline; their KeyErrors keep their keys.
func TestValidateRunsProbesOnlyWhenAsked(t *testing.T) {
	var runs atomic.Int32
	var left atomic.Int64 // time left on the probe's ctx, in ms
	spec := sdk.NewSpec(sdk.String("url").Default("http://registry"), sdk.Int("n").Default("1").Min(1)).
		WithProbe(func(ctx context.Context, cfg sdk.Config) error {
			runs.Add(1)
			if dl, ok := ctx.Deadline(); ok {
				left.Store(time.Until(dl).Milliseconds())
			}
			return errors.Join(sdk.KeyError("url", "%s: subject s: field f changed", cfg.String("url")), errors.New("whole"))
		})
	p := serveProbe(t, sdk.Component{Name: "snk", Spec: spec, Sink: probeSink{newProbe(true)}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if errs, err := p.Validate(ctx, sdk.KindSink, "snk", map[string]string{}); err != nil || len(errs) != 0 || runs.Load() != 0 {
		t.Fatalf("Validate without probe = %q, %v; probes ran %d times, want none", errs, err, runs.Load())
	}
	if errs, err := p.ValidateAndProbe(ctx, sdk.KindSink, "snk", map[string]string{"n": "0"}); err != nil || len(errs) != 1 || errs[0].Key != "n" || runs.Load() != 0 {
		t.Fatalf("a bad field = %q, %v; probes ran %d times; want the field's error and no probe", errs, err, runs.Load())
	}
	errs, err := p.ValidateAndProbe(ctx, sdk.KindSink, "snk", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.ConfigError{{Key: "url", Message: "http://registry: subject s: field f changed"}, {Message: "whole"}}
	if !slices.Equal(errs, want) {
		t.Errorf("ValidateAndProbe = %q, want %q", errs, want)
	}
	if ms := left.Load(); ms <= 0 || ms >= 5000 {
		t.Errorf("the probe's ctx had %d ms left, want a deadline before the host's 5 s", ms)
	}
}

// A probe that ignores its ctx does not hang the call: the answer comes
// before the host's deadline and says the checks did not finish; a panic
// is a problem, not a crash.
func TestProbeThatHangsOrPanics(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := sdk.NewSpec(sdk.String("x")).WithProbe(func(context.Context, sdk.Config) error { <-release; return nil })
	boom := sdk.NewSpec(sdk.String("x")).WithProbe(func(context.Context, sdk.Config) error { panic("boom") })
	p := serveProbe(t, sdk.Component{Name: "hang", Spec: hang, Sink: probeSink{newProbe(true)}})

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	errs, err := p.ValidateAndProbe(ctx, sdk.KindSink, "hang", nil)
	if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Message, "did not finish in time") {
		t.Errorf("a hanging probe = %q, %v; want one problem saying it did not finish", errs, err)
	}
	if took := time.Since(start); took >= 500*time.Millisecond {
		t.Errorf("answered after %v, not before the host's deadline", took)
	}

	p = serveProbe(t, sdk.Component{Name: "boom", Spec: boom, Sink: probeSink{newProbe(true)}})
	errs, err = p.ValidateAndProbe(context.Background(), sdk.KindSink, "boom", nil)
	if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Message, "panicked: boom") {
		t.Errorf("a panicking probe = %q, %v", errs, err)
	}
}
