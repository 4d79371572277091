package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/model/scripted"
)

// legSecrets are set in this process's environment: names as people write them, each
// value with a marker no other variable holds.
var legSecrets = map[string]string{
	"ANTHROPIC_API_KEY":   "sk-ant-test-MARKER1abcdefghij",
	"GITHUB_TOKEN":        "ghp_MARKER3abcdefghijklmnopqrstuvwxyz",
	"MY_SERVICE_PASSWORD": "MARKER4-hunter2",
	"DATABASE_URL":        "postgres://u:MARKER5@h/db",
}

func marker(v string) string { return v[strings.Index(v, "MARKER"):][:7] }

// runEnvLeg runs one leg whose model asks Bash for `env` (read-only: no question) and
// returns the tool's answer and the leg's env.scrubbed notice.
func runEnvLeg(t *testing.T, deps agent.Deps, sp agent.TaskSpec) (string, *sema.Notice) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"command": "env"})
	deps.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}}, {Text: "done"}}})
	res, err := agent.New(deps).Run(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for _, b := range toolResults(t, res, 1) {
		out += fmt.Sprint(b.Content)
	}
	var scrubbed *sema.Notice
	for i, n := range res.Notices {
		if n.Code == env.CodeEnvScrubbed {
			if scrubbed != nil {
				t.Fatalf("two %s notices", env.CodeEnvScrubbed)
			}
			scrubbed = &res.Notices[i]
		}
	}
	if !slices.Equal(res.Manifest.Shell.EnvHeld, heldOf(scrubbed)) {
		t.Fatalf("the manifest lists %q, the notice %q", res.Manifest.Shell.EnvHeld, heldOf(scrubbed))
	}
	return out, scrubbed
}

func heldOf(n *sema.Notice) []string {
	if n == nil {
		return nil
	}
	return n.Detail["held"].([]string)
}

// A leg's Bash does not see sema's secrets, and the leg says once which it held back —
// names, never values. The deployment's pass-through and a trusted workspace's keep one
// (the calibration: the same `env` then shows it); an untrusted workspace's does not; a
// pass-through of the provider's key is refused at the door.
func TestLegCommandsDoNotInheritSecrets(t *testing.T) {
	for k, v := range legSecrets {
		t.Setenv(k, v)
	}
	out, n := runEnvLeg(t, agent.Deps{}, spec(t))
	if n == nil {
		t.Fatal("no env.scrubbed notice")
	}
	for k, v := range legSecrets {
		if strings.Contains(out, marker(v)) {
			t.Errorf("Bash env showed %s", k)
		}
		if !slices.Contains(heldOf(n), k) {
			t.Errorf("the notice does not name %s: %v", k, heldOf(n))
		}
		if detail, _ := json.Marshal(n); strings.Contains(n.Message+string(detail), marker(v)) {
			t.Errorf("the notice holds the value of %s", k)
		}
	}
	if !strings.Contains(out, "PATH=") {
		t.Fatalf("Bash env lost PATH:\n%s", out)
	}

	out, n = runEnvLeg(t, agent.Deps{Shell: &agent.ShellOptions{EnvPassthrough: []string{"GITHUB_TOKEN", "MY_SERVICE_*"}}}, spec(t))
	if !strings.Contains(out, marker(legSecrets["GITHUB_TOKEN"])) || !strings.Contains(out, marker(legSecrets["MY_SERVICE_PASSWORD"])) {
		t.Fatalf("calibration: passed through, the secrets do not show:\n%s", out)
	}
	if strings.Contains(out, marker(legSecrets["ANTHROPIC_API_KEY"])) || slices.Contains(heldOf(n), "GITHUB_TOKEN") {
		t.Fatalf("pass-through: output %q, held %v", out, heldOf(n))
	}

	for _, trusted := range []bool{false, true} {
		sp := spec(t)
		if err := os.MkdirAll(filepath.Join(sp.Root, ".sema"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sp.Root, ".sema", "settings.json"), []byte(`{"envPassthrough": ["GITHUB_TOKEN"]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := runEnvLeg(t, agent.Deps{Policy: &agent.Policy{TrustProjectSettings: trusted}}, sp)
		if strings.Contains(out, marker(legSecrets["GITHUB_TOKEN"])) != trusted {
			t.Errorf("a workspace's envPassthrough (trusted: %v) gave GITHUB_TOKEN: %v", trusted, !trusted)
		}
	}

	for _, bad := range []string{"ANTHROPIC_API_KEY", "A=B"} {
		deps := agent.Deps{Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}),
			Shell: &agent.ShellOptions{EnvPassthrough: []string{bad}}}
		_, err := agent.New(deps).Run(context.Background(), spec(t))
		if code := sema.CodeOf(err); code != env.CodeEnvPassthroughRefused && code != env.CodeEnvPassthroughInvalid || !strings.Contains(err.Error(), "Deps.Shell.EnvPassthrough") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
