package sdk

import (
	"errors"
	"testing"
	"time"
)

// A typed getter tells a bad value from an absent one, naming the key, so
// no plugin has to parse a value again to find out.
func TestConfigGettersReturnErrors(t *testing.T) {
	cfg := NewConfig(map[string]string{
		"n": " 12 ", "big": "9000000000", "f": "0.5", "b": "true", "d": "1500", "d2": "2s",
		"bad.n": "twelve", "bad.f": "half", "bad.b": "yes please", "bad.d": "soon", "blank": " ",
	})
	if n, err := cfg.Int("n"); n != 12 || err != nil {
		t.Errorf("Int(n) = %d, %v", n, err)
	}
	if n, err := cfg.Int64("big"); n != 9_000_000_000 || err != nil {
		t.Errorf("Int64(big) = %d, %v", n, err)
	}
	if f, err := cfg.Float64("f"); f != 0.5 || err != nil {
		t.Errorf("Float64(f) = %v, %v", f, err)
	}
	if b, err := cfg.Bool("b"); !b || err != nil {
		t.Errorf("Bool(b) = %v, %v", b, err)
	}
	if d, err := cfg.Duration("d"); d != 1500*time.Millisecond || err != nil {
		t.Errorf("Duration(d) = %v, %v", d, err)
	}
	if d, err := cfg.Duration("d2"); d != 2*time.Second || err != nil {
		t.Errorf("Duration(d2) = %v, %v", d, err)
	}
	for _, key := range []string{"absent", "blank"} {
		if n, err := cfg.Int(key); n != 0 || err != nil {
			t.Errorf("Int(%s) = %d, %v; want 0 and no error", key, n, err)
		}
	}
	bad := map[string]func(string) error{
		"bad.n": func(k string) error { _, err := cfg.Int(k); return err },
		"bad.f": func(k string) error { _, err := cfg.Float64(k); return err },
		"bad.b": func(k string) error { _, err := cfg.Bool(k); return err },
		"bad.d": func(k string) error { _, err := cfg.Duration(k); return err },
	}
	for key, get := range bad {
		err := get(key)
		var ce ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s: error %v is no ConfigError naming the key", key, err)
		}
	}
	if _, err := cfg.Int("bad.n"); err == nil || err.Error() != `bad.n: invalid int value "twelve"` {
		t.Errorf("Int(bad.n) error = %v", err)
	}
}

func TestConfigReaderKeepsEveryError(t *testing.T) {
	r := NewConfig(map[string]string{"a": "x", "b": "2", "c": "maybe"}).Reader()
	a, b, c := r.Int("a"), r.Int("b"), r.Bool("c")
	if a != 0 || b != 2 || c {
		t.Errorf("values %d %d %v", a, b, c)
	}
	errs := configErrors(r.Err())
	if len(errs) != 2 || errs[0].Key != "a" || errs[1].Key != "c" {
		t.Fatalf("errors %v; want one under a and one under c", errs)
	}
	if err := NewConfig(nil).Reader().Err(); err != nil {
		t.Errorf("empty reader: %v", err)
	}
}

// Min and Max refuse NaN, which compares false with every bound.
func TestMinMaxRefuseNaN(t *testing.T) {
	spec := NewSpec(Double("x").Min(1), Double("y").Max(1))
	errs := spec.Validate(map[string]string{"x": "NaN", "y": "NaN"})
	if len(errs) != 2 {
		t.Fatalf("NaN accepted: %v", errs)
	}
	if errs := spec.Validate(map[string]string{"x": " 2", "y": " 0"}); len(errs) != 0 {
		t.Fatalf("padded numbers refused: %v", errs)
	}
	if errs := NewSpec(Int("n").Min(1)).Validate(map[string]string{"n": " 0"}); len(errs) != 1 {
		t.Fatalf("a padded 0 passed Min(1): %v", errs)
	}
}

func TestSpecParse(t *testing.T) {
	spec := NewSpec(Int("n").Default("3").Min(1), String("s").Require())
	if _, err := spec.Parse(map[string]string{"n": "0"}); err == nil {
		t.Fatal("Parse accepted n=0 and no s")
	} else if errs := configErrors(err); len(errs) != 2 || errs[0].Key != "n" || errs[1].Key != "s" {
		t.Fatalf("Parse errors %v", errs)
	}
	cfg, err := spec.Parse(map[string]string{"s": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := cfg.Int("n"); n != 3 || err != nil {
		t.Fatalf("default not applied: %d, %v", n, err)
	}
}
