package sdk_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/floehq/floe/sdk"
)

// The Validate call, which config/validate makes, runs the spec's checks
// in the plugin and keeps the key each problem names; a problem with no
// key comes back under the empty key, for the host to place.
func TestValidateRunsTheSpecChecks(t *testing.T) {
	spec := sdk.NewSpec(sdk.List("topics"), sdk.String("topics.regex"), sdk.Int("n").Default("1").Min(1)).
		WithCheck(func(cfg sdk.Config) error {
			if len(cfg.List("topics")) == 0 && cfg.String("topics.regex") == "" {
				return errors.Join(sdk.KeyError("topics", "set topics or topics.regex"), errors.New("nothing to read"))
			}
			return nil
		})
	p := serveProbe(t, sdk.Component{Name: "src", Spec: spec, Source: probeSource{newProbe(true)}})
	ctx := context.Background()
	errs, err := p.Validate(ctx, sdk.KindSource, "src", map[string]string{"name": "x", "source": "src"})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.ConfigError{{Key: "topics", Message: "set topics or topics.regex"}, {Key: "", Message: "nothing to read"}}
	if !slices.Equal(errs, want) {
		t.Errorf("Validate = %q, want %q", errs, want)
	}
	if errs, err := p.Validate(ctx, sdk.KindSource, "src", map[string]string{"n": "0"}); err != nil || len(errs) != 1 || errs[0].Key != "n" {
		t.Errorf("with a bad field: %q, %v; want the field's error only", errs, err)
	}
	if errs, err := p.Validate(ctx, sdk.KindSource, "src", map[string]string{"topics": "orders"}); err != nil || len(errs) != 0 {
		t.Errorf("a valid config: %q, %v", errs, err)
	}
}
