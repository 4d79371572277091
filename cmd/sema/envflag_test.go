package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/env"
)

// --env-passthrough reaches the deployment's seat: the named variable shows in a
// command's environment, which otherwise holds it back (the calibration of each other);
// an entry that is no name, or names the provider's key, is refused before the run.
func TestEnvPassthroughFlag(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GITHUB_TOKEN", "ghp_MARKERcliabcdefghijklmnopqrstuvwxyz")
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"env"}}]},
		{"text":"done"}]}`), 0o644)
	for _, tt := range []struct {
		flag     []string
		wantCode int
		shown    bool   // the command saw GITHUB_TOKEN
		want     string // the refusal's code
	}{
		{nil, exitOK, false, ""},
		{[]string{"--env-passthrough", "GITHUB_TOKEN"}, exitOK, true, ""},
		{[]string{"--env-passthrough", "GITHUB_*", "--env-passthrough", "NPM_TOKEN"}, exitOK, true, ""},
		{[]string{"--env-passthrough", "ANTHROPIC_API_KEY"}, exitUsage, false, env.CodeEnvPassthroughRefused},
		{[]string{"--env-passthrough", "OPENAI_API_KEY"}, exitUsage, false, env.CodeEnvPassthroughRefused},
		{[]string{"--env-passthrough", "A=B"}, exitUsage, false, env.CodeEnvPassthroughInvalid},
		{[]string{"--env-passthrough", "*"}, exitUsage, false, env.CodeEnvPassthroughInvalid},
		{[]string{"--env-passthrough", ""}, exitUsage, false, env.CodeEnvPassthroughInvalid},
	} {
		args := []string{"run", "--cwd", t.TempDir(), "--home", t.TempDir(), "--sandbox", "off", "--model", "scripted/" + script,
			"--output-format", "stream-json"}
		code, out := runCLI(t, append(append(args, tt.flag...), "look"))
		if code != tt.wantCode {
			t.Fatalf("%q: exit %d, want %d\n%s", tt.flag, code, tt.wantCode, out)
		}
		if code == exitUsage {
			if !strings.Contains(out, tt.want) || !strings.Contains(out, "--env-passthrough") {
				t.Fatalf("%q: the refusal does not name %s and the flag: %s", tt.flag, tt.want, out)
			}
			continue
		}
		if strings.Contains(out, "MARKERcli") != tt.shown {
			t.Fatalf("%q: GITHUB_TOKEN shown %v, want %v\n%s", tt.flag, !tt.shown, tt.shown, out)
		}
		if !strings.Contains(out, "PATH=") {
			t.Fatalf("%q: the command did not run:\n%s", tt.flag, out)
		}
	}
}
