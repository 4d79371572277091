//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/env"
)

// The cost of confinement, step by step: `true` started directly, through the helper with
// Landlock alone, with a mount namespace, and with mount and network namespaces.
func benchStart(b *testing.B, wrapped bool, iso env.Isolation) {
	warmAndCold(b, func(b *testing.B) { benchStartOnce(b, wrapped, iso) })
}

// warmAndCold runs bench twice: with the host's spares (the helper started ahead), and
// with every helper started when its command starts.
func warmAndCold(b *testing.B, bench func(*testing.B)) {
	b.Run("warm", bench)
	b.Run("cold", func(b *testing.B) {
		env.WarmStart(false)
		defer env.WarmStart(true)
		bench(b)
	})
}

func benchStartOnce(b *testing.B, wrapped bool, iso env.Isolation) {
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

// benchView starts `true` through Kernel.Wrap — the whole helper, with the view and every
// namespace the kernel offers — under a policy shaped like a leg's: the system
// readable, a root and a temp dir writable and, with caches, the machine's toolchain
// caches that exist (at most three) each under a private layer.
func benchView(b *testing.B, caches bool) {
	warmAndCold(b, func(b *testing.B) { benchViewOnce(b, caches) })
}

func benchViewOnce(b *testing.B, caches bool) {
	k := Probe()
	if !k.Available() || !k.MountNamespace {
		b.Skipf("no kernel sandbox with a view on this machine: %s", k.Reason)
	}
	dir := b.TempDir()
	root, tmp, layer := filepath.Join(dir, "root"), filepath.Join(dir, "tmp"), filepath.Join(dir, "layer")
	for _, d := range []string{root, tmp, layer} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p := Policy{Read: existing(resolved(systemReadable)), Write: []string{root, tmp}, TempDir: tmp,
		Devices: existing(append([]string(nil), systemDevices...))}
	if caches {
		if !k.Overlay {
			b.Skip("no overlay mounts on this machine")
		}
		home, _ := os.UserHomeDir()
		_, write := Toolchain(home, os.Getenv)
		p.Caches, p.CacheLayer = existing(resolved(write)), layer
		if len(p.Caches) > 3 {
			p.Caches = p.Caches[:3]
		}
		if len(p.Caches) == 0 {
			b.Skip("no toolchain cache on this machine")
		}
	}
	h := env.NewHost()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req, err := k.Wrap(env.ExecRequest{Argv: []string{"/bin/true"}, Dir: root}, p)
		if err != nil {
			b.Fatal(err)
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

func BenchmarkWrapView(b *testing.B)       { benchView(b, false) }
func BenchmarkWrapViewCaches(b *testing.B) { benchView(b, true) }
