package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Tuning holds internal timings; zero values take the defaults. Tests
// shorten them.
type Tuning struct {
	// ReadPoll bounds one Read, so a task can act between reads on an
	// idle source (deliver source commits, notice a stop). Default 1 s.
	ReadPoll time.Duration
	// ShutdownTimeout bounds the final checkpoint when the lifetime ctx
	// of Start ends. Default 60 s.
	ShutdownTimeout time.Duration
	// CloseTimeout bounds closing a task or a plugin. Default 10 s.
	CloseTimeout time.Duration
	// CommitMaxAttempts and CommitMaxElapsed bound the retries of one
	// checkpoint's commit; past either the tasks fail. Default 10, 5 min.
	CommitMaxAttempts int
	CommitMaxElapsed  time.Duration
	// CommitBackoff doubles per retry up to CommitMaxBackoff. Default
	// 200 ms and 10 s.
	CommitBackoff    time.Duration
	CommitMaxBackoff time.Duration
	// RevokeTimeout bounds PartitionsRevoked's wait for the commit of the
	// revoked partitions. Default max(30 s, 3 commit intervals).
	RevokeTimeout time.Duration
	// RestartStableAfter: a plugin process that lived this long resets
	// the count of consecutive restarts. Default 60 s.
	RestartStableAfter time.Duration
	// GapWait is how long the cluster committer lets a flushed checkpoint
	// wait on a gap before it reads the table's frontier to tell why
	// (see gapWatch). Default max(15 s, 3 commit intervals).
	GapWait time.Duration
	// DeadLetterConnectTimeout bounds connecting the dead-letter producer
	// and creating its topic. Default dlq.DefaultConnectTimeout (30 s).
	DeadLetterConnectTimeout time.Duration
}

// withDefaults fills the zero fields with their defaults. A negative
// field, or a CommitBackoff above CommitMaxBackoff, is an error naming the
// field and its limit: a wrong tuning is reported, never silently
// replaced by a default (it used to be).
func (t Tuning) withDefaults(commitInterval time.Duration) (Tuning, error) {
	var errs []error
	def := func(name string, d *time.Duration, v time.Duration) {
		switch {
		case *d < 0:
			errs = append(errs, fmt.Errorf("tuning %s is %s: it must be ≥ 0 (0 takes the default, %s)", name, *d, v))
		case *d == 0:
			*d = v
		}
	}
	def("ReadPoll", &t.ReadPoll, time.Second)
	def("ShutdownTimeout", &t.ShutdownTimeout, 60*time.Second)
	def("CloseTimeout", &t.CloseTimeout, 10*time.Second)
	def("CommitMaxElapsed", &t.CommitMaxElapsed, 5*time.Minute)
	def("CommitBackoff", &t.CommitBackoff, 200*time.Millisecond)
	def("CommitMaxBackoff", &t.CommitMaxBackoff, 10*time.Second)
	def("RevokeTimeout", &t.RevokeTimeout, max(30*time.Second, 3*commitInterval))
	def("RestartStableAfter", &t.RestartStableAfter, 60*time.Second)
	def("GapWait", &t.GapWait, max(5*resendEvery, 3*commitInterval))
	if t.DeadLetterConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("tuning DeadLetterConnectTimeout is %s: it must be ≥ 0 (0 takes the dead-letter queue's default)", t.DeadLetterConnectTimeout))
	}
	switch {
	case t.CommitMaxAttempts < 0:
		errs = append(errs, fmt.Errorf("tuning CommitMaxAttempts is %d: it must be ≥ 0 (0 takes the default, 10)", t.CommitMaxAttempts))
	case t.CommitMaxAttempts == 0:
		t.CommitMaxAttempts = 10
	}
	if t.CommitBackoff > 0 && t.CommitMaxBackoff > 0 && t.CommitBackoff > t.CommitMaxBackoff {
		errs = append(errs, fmt.Errorf("tuning CommitBackoff is %s: it must be ≤ CommitMaxBackoff (%s)", t.CommitBackoff, t.CommitMaxBackoff))
	}
	return t, errors.Join(errs...)
}
