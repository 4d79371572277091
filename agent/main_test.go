package agent_test

import (
	"os"
	"testing"

	"github.com/sema-agent/sema/env"
)

// The tests run without the credentials of the environment they were started in: a leg
// names the variables its programs do not inherit (env.scrubbed), and the event streams
// the tests compare must not depend on whose machine runs them. A test that needs a
// secret sets it (t.Setenv).
func TestMain(m *testing.M) {
	for _, name := range env.Inherit(os.Environ(), env.Passthrough{}).Held {
		os.Unsetenv(name)
	}
	os.Exit(m.Run())
}
