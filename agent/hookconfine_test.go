package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/sandbox"
)

// A confined command hook builds as a command does: it has a private temp directory
// (TMPDIR) and writes the toolchain caches through a private layer, so a hook running
// `go vet` works while the cache later builds outside use stays as it was. The temp
// directory is gone when the run ends. Calibrated: unconfined, the same hook writes the
// shared cache.
func TestConfinedHookHasTempAndPrivateCaches(t *testing.T) {
	for _, mode := range sandboxModes(t) {
		t.Run(string(mode), func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			must(t, err)
			root, cache, tmpBase := filepath.Join(base, "ws"), filepath.Join(base, "gocache"), filepath.Join(base, "tmp")
			for _, d := range []string{root, cache, tmpBase} {
				must(t, os.MkdirAll(d, 0o755))
			}
			t.Setenv("GOCACHE", cache)
			t.Setenv("TMPDIR", tmpBase) // where the hooks' temp directory is made
			hook := `echo scratch > "$TMPDIR/f" && cat "$TMPDIR/f" > "` + root + `/tmp.out"; ` +
				`touch "$GOCACHE/hook-wrote" && echo cache-ok > "` + root + `/cache.out"`
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "Done."}}})
			res, err := agent.New(agent.Deps{Provider: p, Shell: &agent.ShellOptions{Sandbox: mode},
				Hooks: &agent.Hooks{Events: []hooks.Hook{{Event: hooks.Stop, Command: hook}}}}).
				Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
			must(t, err)
			if res.Status != sema.StatusCompleted {
				t.Fatalf("status %s: %+v", res.Status, res.Error)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "tmp.out")); strings.TrimSpace(string(b)) != "scratch" {
				t.Fatalf("the hook could not use its temp directory: %q; notices %+v", b, res.Notices)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "cache.out")); strings.TrimSpace(string(b)) != "cache-ok" {
				t.Fatalf("the hook could not write the Go cache: %q; notices %+v", b, res.Notices)
			}
			_, err = os.Stat(filepath.Join(cache, "hook-wrote"))
			if shared := err == nil; shared != (mode == sandbox.ModeOff) {
				t.Fatalf("the shared cache was written: %v (sandbox %s)", shared, mode)
			}
			if left, _ := filepath.Glob(filepath.Join(tmpBase, "sema-hook-*")); len(left) > 0 {
				t.Fatalf("the hooks' temp directory outlived the run: %v", left)
			}
		})
	}
}
