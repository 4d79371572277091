//go:build linux

package shell

import (
	"os/exec"
	"strings"
	"testing"
)

// shellSecrets are set in this process's environment: names as people write them, each
// value with a marker no other variable holds.
var shellSecrets = map[string]string{
	"ANTHROPIC_API_KEY":     "sk-ant-test-MARKER1abcdefghij",
	"OPENAI_API_KEY":        "sk-test-MARKER2",
	"GITHUB_TOKEN":          "ghp_MARKER3abcdefghijklmnopqrstuvwxyz",
	"MY_SERVICE_PASSWORD":   "MARKER4-hunter2",
	"DATABASE_URL":          "postgres://u:MARKER5@h/db",
	"AWS_SECRET_ACCESS_KEY": "MARKER6wJalrXUtnFEMI/K7MDENG",
	"DEPLOY_NOTE":           "xoxb-MARKER7-1234567890",
	"GPG_AGENT_INFO":        "/tmp/MARKER8-gpg:0:1",
}

func shellProvider(name string) bool { return name == "ANTHROPIC_API_KEY" || name == "OPENAI_API_KEY" }

// envSpellings are ways a command shows its environment. needs names a program the
// spelling needs, skipped (with the reason) where it is missing.
var envSpellings = []struct {
	cmd, needs string
	readonly   bool // bash_readonly runs it too (its allowlist refuses the others)
}{
	{"env", "", true},
	{"printenv", "", false},
	{`echo "$ANTHROPIC_API_KEY $OPENAI_API_KEY $GITHUB_TOKEN $MY_SERVICE_PASSWORD $DATABASE_URL $AWS_SECRET_ACCESS_KEY $DEPLOY_NOTE $GPG_AGENT_INFO"`, "", false},
	{"cat /proc/self/environ | tr '\\0' '\\n'", "", false},
	{"tr '\\0' '\\n' < /proc/$$/environ", "", false},
	{"export -p", "", false},
	{"declare -x", "", false},
	{"set", "", false},
	{"sh -c 'env'", "", false},
	{`python3 -c 'import os;print(os.environ)'`, "python3", false},
	{`perl -e 'print "$_=$ENV{$_}\n" for sort keys %ENV'`, "perl", false},
}

// No command — foreground, background or bash_readonly, with the kernel sandbox on or
// off — sees a secret of sema's environment, however it spells the question. Each
// spelling is calibrated: the same command in a set whose pass-through names the
// secrets shows every one but the provider keys, which nothing passes.
func TestCommandsDoNotInheritSecrets(t *testing.T) {
	var pass []string
	for k, v := range shellSecrets {
		t.Setenv(k, v)
		if !shellProvider(k) {
			pass = append(pass, k)
		}
	}
	pass = append(pass, "ANTHROPIC_*", "OPENAI_*")
	modes := map[string]func(t *testing.T) []func(*Config){
		"sandbox off": func(*testing.T) []func(*Config) { return nil },
		"sandbox on":  func(t *testing.T) []func(*Config) { return []func(*Config){sandboxed(t)} },
	}
	for mode, configure := range modes {
		t.Run(mode, func(t *testing.T) {
			opts := configure(t)
			passing := append(opts[:len(opts):len(opts)], func(c *Config) { c.EnvPassthrough = pass })
			free, scrubbed := newFix(t, passing...), newFix(t, opts...)
			roFree, roScrubbed := newReadonlyFix(t, passing...), newReadonlyFix(t, opts...)
			runs := map[string]func(f *fix, cmd string) string{
				"Bash": func(f *fix, cmd string) string { return f.bash(cmd) },
				"background": func(f *fix, cmd string) string {
					id := f.start(cmd)
					return f.until(id, "exited")
				},
			}
			for _, s := range envSpellings {
				if s.needs != "" {
					if _, err := exec.LookPath(s.needs); err != nil {
						t.Logf("skipping %q: %s is not installed", s.cmd, s.needs)
						continue
					}
				}
				check := func(tool, shown, hidden string) {
					t.Helper()
					for k, v := range shellSecrets {
						marker := v[strings.Index(v, "MARKER"):][:7]
						// The sandbox blanks agent sockets itself (tools/shell/sandbox.go).
						blanked := mode == "sandbox on" && k == "GPG_AGENT_INFO"
						if !shellProvider(k) && !blanked && !strings.Contains(shown, marker) {
							t.Errorf("calibration: %s %q with %s passed through does not show it:\n%s", tool, s.cmd, k, shown)
						}
						if strings.Contains(hidden, marker) || shellProvider(k) && strings.Contains(shown, marker) {
							t.Errorf("%s %q showed %s", tool, s.cmd, k)
						}
					}
				}
				for tool, run := range runs {
					check(tool, run(free, s.cmd), run(scrubbed, s.cmd))
				}
				if s.readonly {
					_, shown := roFree.readonly(s.cmd)
					_, hidden := roScrubbed.readonly(s.cmd)
					check(NameBashReadonly, shown, hidden)
				}
			}
		})
	}
}

// A pass-through naming a provider's key, or an entry that is no name, refuses the set.
func TestEnvPassthroughRefusedByName(t *testing.T) {
	for _, bad := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "", "A=B", "*", "*_TOKEN"} {
		cfg := Config{EnvPassthrough: []string{bad}}
		f := newFix(t)
		cfg.Env, cfg.Fence = f.set.cfg.Env, f.set.cfg.Fence
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "config.env_passthrough_") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
