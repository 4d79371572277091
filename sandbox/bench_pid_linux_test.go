//go:build linux

package sandbox

import (
	"testing"

	"github.com/sema-agent/sema/env"
)

// The PID namespace's share: the helper forks the command and stays as its init instead
// of becoming it.
func BenchmarkHelperMountNetPidNS(b *testing.B) {
	benchStart(b, true, env.Isolation{Mount: true, Network: true, PID: true})
}
