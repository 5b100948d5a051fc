package runtime

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTuningRejectsOutOfRange: withDefaults used to replace a negative
// value with the default without a word.
func TestTuningRejectsOutOfRange(t *testing.T) {
	got, err := Tuning{}.withDefaults(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReadPoll != time.Second || got.CommitMaxAttempts != 10 || got.RevokeTimeout != time.Minute || got.CommitMaxBackoff != 10*time.Second {
		t.Errorf("defaults = %+v", got)
	}
	for _, c := range []struct {
		tuning Tuning
		want   string
	}{
		{Tuning{ReadPoll: -time.Second}, "tuning ReadPoll is -1s: it must be ≥ 0 (0 takes the default, 1s)"},
		{Tuning{RevokeTimeout: -1}, "tuning RevokeTimeout is -1ns: it must be ≥ 0 (0 takes the default, 1m0s)"},
		{Tuning{CommitMaxAttempts: -3}, "tuning CommitMaxAttempts is -3: it must be ≥ 0 (0 takes the default, 10)"},
		{Tuning{DeadLetterConnectTimeout: -time.Minute}, "tuning DeadLetterConnectTimeout is -1m0s: it must be ≥ 0"},
		{Tuning{CommitBackoff: time.Minute}, "tuning CommitBackoff is 1m0s: it must be ≤ CommitMaxBackoff (10s)"},
		{Tuning{CommitBackoff: time.Second, CommitMaxBackoff: time.Millisecond}, "tuning CommitBackoff is 1s: it must be ≤ CommitMaxBackoff (1ms)"},
	} {
		if _, err := c.tuning.withDefaults(20 * time.Second); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.tuning, err, c.want)
		}
	}
	// Every bad field is named, not only the first.
	_, err = Tuning{ReadPoll: -1, CloseTimeout: -1}.withDefaults(0)
	if err == nil || !strings.Contains(err.Error(), "ReadPoll") || !strings.Contains(err.Error(), "CloseTimeout") {
		t.Errorf("two bad fields: %v", err)
	}
}

// TestStartRejectsBadTuning: the error surfaces from Start, with the
// connector's config errors, instead of a connector running on defaults.
func TestStartRejectsBadTuning(t *testing.T) {
	e := newEnv(t, &fakeSourceCfg{partitions: 1, batch: 10}, nil)
	e.opts.Tuning.ShutdownTimeout = -time.Second
	c, err := Start(context.Background(), e.opts)
	if err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("Start with a negative ShutdownTimeout: no error")
	}
	if want := "runtime: connector c: tuning ShutdownTimeout is -1s: it must be ≥ 0"; !strings.Contains(err.Error(), want) {
		t.Errorf("Start: %v, want %q", err, want)
	}
}
