package cluster

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the group describer, as the
// floe binary does when a Membership starts it (describer.go).
func TestMain(m *testing.M) {
	if os.Getenv(DescriberEnv) == "1" {
		os.Exit(ServeDescriber(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
