package sdktest

import "testing"

// tb is what the kits need from a test: testing.TB plus named subtests.
// The exported kits take a *testing.T and adapt it; the kits' own tests
// pass a recorder, to check that a kit fails when it should.
type tb interface {
	testing.TB
	run(name string, f func(t tb)) bool
}

// tAdapter runs subtests as *testing.T subtests.
type tAdapter struct{ *testing.T }

func (a tAdapter) run(name string, f func(t tb)) bool {
	return a.Run(name, func(t *testing.T) { f(tAdapter{t}) })
}
