//go:build linux

package shell

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sema-agent/sema/sandbox"
)

// walkedRecorder is a change recorder whose walk found the places it is given.
type walkedRecorder struct {
	readOnly, hidden func() []string
}

func (walkedRecorder) Before(context.Context, bool) ([]string, error) { return nil, nil }
func (walkedRecorder) After(context.Context) []string                 { return nil }
func (w walkedRecorder) Confinement(context.Context) ([]string, []string) {
	return w.readOnly(), w.hidden()
}

// What the recorder's walk found reaches the command's policy: the protected entries
// below the top of the root are read-only (unless a person approved the call), the
// multi-link files are hidden (always). Calibrated: without the recorder, the same
// command writes and reads them.
func TestWalkedPlacesReachThePolicy(t *testing.T) {
	k := sandbox.Probe()
	if !k.Available() || !k.MountNamespace {
		t.Skipf("the kernel sandbox cannot bind places here: %s", k.Reason)
	}
	const cmd = `echo '{"evil":1}' > sub/.vscode/settings.json; cat sub/.vscode/settings.json; cat linked`
	setup := func(withRecorder bool) *fix {
		var f *fix
		f = newFix(t, func(c *Config) {
			c.Sandbox = &Sandbox{Kernel: k}
			if withRecorder {
				c.Changes = walkedRecorder{
					readOnly: func() []string { return []string{f.path("sub/.vscode")} },
					hidden:   func() []string { return []string{f.path("linked")} },
				}
			}
		})
		f.put("sub/.vscode/settings.json", "{}\n")
		outside := tempDir(t) + "/secret"
		if err := os.WriteFile(outside, []byte("OUTSIDE-SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(outside, f.path("linked")); err != nil {
			t.Fatal(err)
		}
		return f
	}
	free := setup(false)
	if out := free.call(context.Background(), NameBash, map[string]any{"command": cmd}).TextOf(); !strings.Contains(out, "evil") || !strings.Contains(out, "OUTSIDE-SECRET") {
		t.Fatalf("calibration: the sandbox without the walk's places did not let the command write and read: %q", out)
	}
	f := setup(true)
	out := f.call(context.Background(), NameBash, map[string]any{"command": cmd}).TextOf()
	if strings.Contains(out, "evil") || strings.Contains(out, "OUTSIDE-SECRET") || !strings.Contains(out, "Read-only file system") {
		t.Errorf("confined with the walk's places: %q", out)
	}
	// A person's yes lifts the read-only places, never the hidden ones.
	out = f.call(sandbox.WithApproval(context.Background()), NameBash, map[string]any{"command": cmd}).TextOf()
	if !strings.Contains(out, "evil") || strings.Contains(out, "OUTSIDE-SECRET") {
		t.Errorf("approved: %q", out)
	}
}

// The cost of the places a walk adds, per command: n multi-link files hidden.
func benchHidden(b *testing.B, n int) {
	k := sandbox.Probe()
	if !k.Available() || !k.MountNamespace {
		b.Skipf("the kernel sandbox cannot bind places here: %s", k.Reason)
	}
	var hidden []string
	var f *fix
	f = newFix(b, func(c *Config) {
		c.Sandbox = &Sandbox{Kernel: k}
		c.Changes = walkedRecorder{readOnly: func() []string { return nil }, hidden: func() []string { return hidden }}
	})
	for i := range n {
		f.put(fmt.Sprintf("l/%04d", i), "x")
		hidden = append(hidden, f.path(fmt.Sprintf("l/%04d", i)))
	}
	tool := f.tools[NameBash]
	input := []byte(`{"command":"true"}`)
	ctx := context.Background()
	for b.Loop() {
		if r := tool.Run(ctx, input); r.IsError {
			b.Fatal(r.TextOf())
		}
	}
}

func BenchmarkBashTrueHidden0(b *testing.B)    { benchHidden(b, 0) }
func BenchmarkBashTrueHidden10(b *testing.B)   { benchHidden(b, 10) }
func BenchmarkBashTrueHidden100(b *testing.B)  { benchHidden(b, 100) }
func BenchmarkBashTrueHidden1000(b *testing.B) { benchHidden(b, 1000) }
