//go:build linux

package sandbox

import (
	"context"
	"testing"

	"github.com/sema-agent/sema/env"
)

// The cost of confinement, step by step: `true` started directly, through the helper with
// Landlock alone, with a mount namespace, and with mount and network namespaces.
func benchStart(b *testing.B, wrapped bool, iso env.Isolation) {
	if wrapped && !Probe().Available() {
		b.Skipf("no kernel sandbox on this machine: %s", Probe().Reason)
	}
	p := Policy{Read: existing(resolved(systemReadable)), Network: !iso.Network}
	h := env.NewHost()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := env.ExecRequest{Argv: []string{"/bin/true"}, Dir: "/"}
		if wrapped {
			var err error
			if req, err = wrap(req, p, iso); err != nil {
				b.Fatal(err)
			}
		}
		pr, err := h.Start(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		st, err := pr.Wait()
		pr.Close()
		if err != nil || st.Code != 0 {
			b.Fatalf("exit %d, %v", st.Code, err)
		}
	}
}

func BenchmarkStartTrue(b *testing.B)      { benchStart(b, false, env.Isolation{}) }
func BenchmarkHelperLandlock(b *testing.B) { benchStart(b, true, env.Isolation{}) }
func BenchmarkHelperMountNS(b *testing.B)  { benchStart(b, true, env.Isolation{Mount: true}) }
func BenchmarkHelperMountNetNS(b *testing.B) {
	benchStart(b, true, env.Isolation{Mount: true, Network: true})
}
