package runtime

import (
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
	// DeadLetterConnectTimeout bounds connecting the dead-letter producer
	// and creating its topic. Default dlq.DefaultConnectTimeout (30 s).
	DeadLetterConnectTimeout time.Duration
}

func (t Tuning) withDefaults(commitInterval time.Duration) Tuning {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadPoll, time.Second)
	def(&t.ShutdownTimeout, 60*time.Second)
	def(&t.CloseTimeout, 10*time.Second)
	def(&t.CommitMaxElapsed, 5*time.Minute)
	def(&t.CommitBackoff, 200*time.Millisecond)
	def(&t.CommitMaxBackoff, 10*time.Second)
	def(&t.RevokeTimeout, max(30*time.Second, 3*commitInterval))
	def(&t.RestartStableAfter, 60*time.Second)
	if t.CommitMaxAttempts <= 0 {
		t.CommitMaxAttempts = 10
	}
	return t
}
