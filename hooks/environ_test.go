package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/sandbox"
)

// hookSecrets are the shared fake secrets (envtest.FakeSecrets).
var hookSecrets = envtest.FakeSecrets

// A command hook inherits none of sema's secrets, whichever way it looks and whether or
// not the sandbox wraps it; the same hook with a pass-through naming them sees every one
// but the provider keys (the calibration). The settings' env reaches it as written.
func TestCommandHookEnvironmentIsScrubbed(t *testing.T) {
	var pass []string
	for k, v := range hookSecrets {
		t.Setenv(k, v)
		if k != "ANTHROPIC_API_KEY" && k != "OPENAI_API_KEY" {
			pass = append(pass, k)
		}
	}
	wraps := map[string]func(t *testing.T, dir string) func(env.ExecRequest) (env.ExecRequest, error){
		"unconfined": func(*testing.T, string) func(env.ExecRequest) (env.ExecRequest, error) { return nil },
		"sandboxed": func(t *testing.T, dir string) func(env.ExecRequest) (env.ExecRequest, error) {
			k := sandbox.Probe()
			if !k.Available() {
				t.Skipf("no kernel sandbox on this machine: %s", k.Reason)
			}
			f, err := fence.New(context.Background(), fence.Config{Env: env.NewHost(), Root: dir})
			if err != nil {
				t.Fatal(err)
			}
			p := sandbox.ForFence(f, sandbox.Options{TempDir: filepath.Join(dir, "tmp")})
			return func(req env.ExecRequest) (env.ExecRequest, error) { return k.Wrap(req, p) }
		},
	}
	scripts := []string{"env", "cat /proc/self/environ | tr '\\0' '\\n'", "export -p", "set",
		`for v in ANTHROPIC_API_KEY OPENAI_API_KEY GITHUB_TOKEN MY_SERVICE_PASSWORD DATABASE_URL AWS_SECRET_ACCESS_KEY DEPLOY_NOTE SSH_AUTH_SOCK TEAM_TOKEN; do eval "echo \$$v"; done`}
	for name, wrap := range wraps {
		t.Run(name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
				t.Fatal(err)
			}
			w := wrap(t, dir)
			run := func(script string, pass []string) string {
				out := filepath.Join(dir, "seen")
				os.Remove(out)
				r := &Runner{Exec: env.NewHost(), ProjectDir: dir, Wrap: w, EnvPassthrough: pass, Env: []string{"TEAM_TOKEN=from-settings"}}
				res := commandSet(t, PreToolUse, "{ "+script+"; } > "+out).Run(context.Background(), r, PreToolUse, "Bash", Input{})
				if res.Ran != 1 || len(res.Failures) != 0 {
					t.Fatalf("%q: %+v", script, res)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			for _, script := range scripts {
				free, scrubbed := run(script, append(pass, "ANTHROPIC_*", "OPENAI_*")), run(script, nil)
				for k, v := range hookSecrets {
					marker := v[strings.Index(v, "MARKER"):][:7]
					provider := k == "ANTHROPIC_API_KEY" || k == "OPENAI_API_KEY"
					if !provider && !strings.Contains(free, marker) {
						t.Errorf("calibration: %q with %s passed through does not show it", script, k)
					}
					if strings.Contains(scrubbed, marker) || provider && strings.Contains(free, marker) {
						t.Errorf("%q showed %s", script, k)
					}
				}
				if !strings.Contains(scrubbed, "from-settings") {
					t.Errorf("%q lost the settings' env:\n%s", script, scrubbed)
				}
			}
		})
	}
}
