package sdk

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

func TestKeyErrorIsAConfigError(t *testing.T) {
	err := fmt.Errorf("orders source: %w", KeyError("topics", "set %s or %s", "topics", "topics.regex"))
	var ce ConfigError
	if !errors.As(err, &ce) || ce.Key != "topics" || ce.Message != "set topics or topics.regex" {
		t.Fatalf("errors.As found %+v in %v", ce, err)
	}
	if got := ce.Error(); got != "topics: set topics or topics.regex" {
		t.Errorf("Error() = %q", got)
	}
	if got := (ConfigError{Message: "the config as a whole"}).Error(); got != "the config as a whole" {
		t.Errorf("a keyless ConfigError reads %q", got)
	}
}

func TestConfigErrorsOfACheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []ConfigError
	}{
		{"nil", nil, nil},
		{"one key", KeyError("a", "bad"), []ConfigError{{"a", "bad"}}},
		{"pointer", &ConfigError{"a", "bad"}, []ConfigError{{"a", "bad"}}},
		{"joined", errors.Join(KeyError("a", "x"), KeyError("b", "y")), []ConfigError{{"a", "x"}, {"b", "y"}}},
		{"wrapped join", fmt.Errorf("sink: %w", errors.Join(KeyError("a", "x"), KeyError("b", "y"))), []ConfigError{{"a", "x"}, {"b", "y"}}},
		{"plain", errors.New("tables and topics disagree"), []ConfigError{{"", "tables and topics disagree"}}},
		{"wrapped plain", fmt.Errorf("sink: %w", errors.New("no")), []ConfigError{{"", "sink: no"}}},
		{"join of keyed and plain", errors.Join(KeyError("a", "x"), errors.New("y")), []ConfigError{{"a", "x"}, {"", "y"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := configErrors(tc.err); !slices.Equal(got, tc.want) {
				t.Errorf("configErrors(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestSpecChecksRunAfterTheFields(t *testing.T) {
	var seen []Config
	base := NewSpec(String("a"), Int("n").Default("3").Min(1))
	spec := base.WithCheck(func(cfg Config) error {
		seen = append(seen, cfg)
		if cfg.String("a") == "" {
			n, err := cfg.Int("n")
			if err != nil {
				return err
			}
			return KeyError("a", "set a when n is %d", n)
		}
		return nil
	}).WithCheck(func(Config) error { return errors.New("second check") })

	if errs := spec.Validate(map[string]string{"n": "0"}); len(errs) != 1 || errs[0].Key != "n" || len(seen) != 0 {
		t.Fatalf("with a bad field: %q, %d checks ran; want only the field's error", errs, len(seen))
	}
	errs := spec.Validate(map[string]string{})
	want := []ConfigError{{"a", "set a when n is 3"}, {"", "second check"}}
	if !slices.Equal(errs, want) {
		t.Fatalf("Validate = %q, want %q (every check, in order, with defaults applied)", errs, want)
	}
	if errs := base.Validate(map[string]string{}); len(errs) != 0 {
		t.Errorf("WithCheck changed the spec it was called on: %q", errs)
	}
	other := base.WithCheck(func(Config) error { return nil })
	if errs := other.Validate(map[string]string{}); len(errs) != 0 {
		t.Errorf("specs derived from one base share checks: %q", errs)
	}
}

// Open refuses a config a check refuses, with the key in the BadRequest
// detail, as it does for field errors.
func TestOpenRunsTheChecks(t *testing.T) {
	c := Component{Name: "x", Source: sourceFunc(nil), Spec: NewSpec(List("topics")).WithCheck(func(cfg Config) error {
		if len(cfg.List("topics")) == 0 {
			return errors.Join(KeyError("topics", "set topics or topics.regex"), errors.New("nothing to read"))
		}
		return nil
	})}
	s, err := newServer([]Component{c}, newPluginLogger(nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.config(c, map[string]string{})
	st := status.Convert(err)
	if !strings.Contains(st.Message(), "topics: set topics or topics.regex; nothing to read") {
		t.Errorf("message %q", st.Message())
	}
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField()+"="+v.GetDescription())
			}
		}
	}
	if want := []string{"topics=set topics or topics.regex", "=nothing to read"}; !slices.Equal(fields, want) {
		t.Errorf("field violations %q, want %q", fields, want)
	}
	if _, err := s.config(c, map[string]string{"topics": "a"}); err != nil {
		t.Errorf("a config the check accepts: %v", err)
	}
}
