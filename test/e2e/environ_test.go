package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// e2eSecrets are put in sema's environment: the provider's key it really uses, and
// secrets named and shaped as people have them. Each value holds a marker.
var e2eSecrets = map[string]string{
	"ANTHROPIC_API_KEY":   "sk-ant-e2e-MARKER1abcdefghij",
	"GITHUB_TOKEN":        "ghp_MARKER3abcdefghijklmnopqrstuvwxyz",
	"MY_SERVICE_PASSWORD": "MARKER4-hunter2",
	"DATABASE_URL":        "postgres://u:MARKER5@h/db",
}

func e2eMarker(v string) string { return v[strings.Index(v, "MARKER"):][:7] }

// TestCommandsAndHooksDoNotSeeSecrets: through the sema binary with the Anthropic
// provider (which reads the key from sema's environment), neither a Bash command nor a
// hook sees the key or the other secrets, however the command asks; sema says on stderr
// which names it held back, never their values; the model never receives a value either.
// Calibrated: the same run with --env-passthrough naming the secrets shows every one but
// the provider's key.
func TestCommandsAndHooksDoNotSeeSecrets(t *testing.T) {
	var pass []string
	envv := home(t)
	for k, v := range e2eSecrets {
		envv = append(envv, k+"="+v)
		if k != "ANTHROPIC_API_KEY" {
			pass = append(pass, "--env-passthrough", k)
		}
	}
	command := `env; echo "key=$ANTHROPIC_API_KEY"; tr '\0' '\n' < /proc/self/environ; python3 -c 'import os;print(dict(os.environ))' 2>/dev/null; export -p`
	run := func(extra ...string) (string, string, string) {
		t.Helper()
		root := writeTree(t, map[string]string{"README.md": "hi\n"})
		srv := anthropictest.NewServer(t,
			anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{Name: "Bash", Input: mustJSON(t, map[string]string{"command": command})}}},
			anthropictest.Turn{Text: "done"})
		settings := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"env > \"$CLAUDE_PROJECT_DIR/hook-env.txt\""}]}]}}`
		args := append([]string{"run", "--model", "anthropic/claude-sonnet-4-5", "--permission-mode", "bypassPermissions",
			"--settings", settings, "--output-format", "text"}, extra...)
		r := sema(t, root, append(envv, "ANTHROPIC_BASE_URL="+srv.URL()), "", append(args, "look")...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || reqs[0].Header.Get("x-api-key") != e2eSecrets["ANTHROPIC_API_KEY"] {
			t.Fatalf("the provider did not use the key of sema's environment (%d requests)", len(reqs))
		}
		result, _ := json.Marshal(reqs[1].Body["messages"])
		if !strings.Contains(string(result), "PATH=") {
			t.Fatalf("the command did not run: %s", result)
		}
		hook, err := os.ReadFile(filepath.Join(root, "hook-env.txt"))
		if err != nil || !strings.Contains(string(hook), "CLAUDE_PROJECT_DIR=") {
			t.Fatalf("the hook did not run: %v %q", err, hook)
		}
		return string(result), string(hook), r.stderr
	}

	result, hook, stderr := run()
	for k, v := range e2eSecrets {
		for what, got := range map[string]string{"the command": result, "the hook": hook, "stderr": stderr} {
			if strings.Contains(got, e2eMarker(v)) {
				t.Errorf("%s showed %s", what, k)
			}
		}
	}
	var notice string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "(env.scrubbed)") {
			notice = line
		}
	}
	for k := range e2eSecrets {
		if !strings.Contains(notice, k) {
			t.Errorf("the env.scrubbed notice does not name %s: %q\n%s", k, notice, stderr)
		}
	}

	result, hook, stderr = run(pass...)
	for k, v := range e2eSecrets {
		provider := k == "ANTHROPIC_API_KEY"
		for what, got := range map[string]string{"the command": result, "the hook": hook} {
			if provider == strings.Contains(got, e2eMarker(v)) {
				t.Errorf("calibration: with --env-passthrough, %s shows %s: %v", what, k, !provider)
			}
		}
		if strings.Contains(stderr, e2eMarker(v)) {
			t.Errorf("stderr showed the value of %s", k)
		}
	}

	r := sema(t, t.TempDir(), envv, "", "run", "--model", "scripted/x", "--env-passthrough", "ANTHROPIC_API_KEY", "look")
	if r.code != 2 || !strings.Contains(r.stderr, "config.env_passthrough_refused") {
		t.Fatalf("a pass-through of the provider key: exit %d\n%s", r.code, r.stderr)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
