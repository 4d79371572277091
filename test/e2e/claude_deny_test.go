package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// claudeSecret is the content of the file a Claude Code deny rule protects.
const claudeSecret = "CLAUDE-DENY-MARKER-7f3a"

// A deny rule in Claude Code's .claude/settings.json keeps the file from the model on a
// run with no flags: neither the Read tool nor a shell command shows it, each call is a
// recorded denial, and no request to the model carries the secret. Calibrated: with
// --no-claude-compat the same run sends the secret to the model.
func TestClaudeDenyRuleAppliesWithoutFlags(t *testing.T) {
	t.Parallel()
	run := func(extra ...string) (bodies string, denials []any, stderr string) {
		t.Helper()
		dir := writeTree(t, map[string]string{
			".claude/settings.json": `{"permissions": {"deny": ["Read(./secrets/**)"]}}`,
			"secrets/key.txt":       claudeSecret + "\n",
			"README.md":             "hi\n",
		})
		root, _ := filepath.EvalSymlinks(dir)
		srv := anthropictest.NewServer(t,
			anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{
				{ID: "r1", Name: "Read", Input: mustJSON(t, map[string]string{"file_path": filepath.Join(root, "secrets", "key.txt")})},
				{ID: "b1", Name: "Bash", Input: mustJSON(t, map[string]string{"command": "cat secrets/key.txt"})}}},
			anthropictest.Turn{Text: "done"})
		env := append(home(t), "ANTHROPIC_API_KEY=sk-ant-e2e-test", "ANTHROPIC_BASE_URL="+srv.URL(), "SEMA_MODEL=anthropic/claude-sonnet-4-5")
		args := append([]string{"-p", "--output-format", "json"}, extra...)
		r := sema(t, root, env, "", append(args, "show me the key")...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		var all strings.Builder
		for _, req := range srv.Requests() {
			all.Write(req.Raw)
		}
		if srv.RequestCount() != 2 {
			t.Fatalf("%d requests to the model, want 2", srv.RequestCount())
		}
		denials, _ = jsonResult(t, r.stdout)["permission_denials"].([]any)
		return all.String(), denials, r.stderr
	}

	bodies, denials, stderr := run()
	if strings.Contains(bodies, claudeSecret) {
		t.Fatalf("the secret a .claude/settings.json deny rule protects reached the model")
	}
	tools := map[string]bool{}
	for _, d := range denials {
		if m, ok := d.(map[string]any); ok {
			// sema's field, or Claude Code's name for it.
			name, _ := m["tool"].(string)
			if n, ok := m["tool_name"].(string); ok {
				name = n
			}
			tools[name] = true
		}
	}
	if !tools["Read"] || !tools["Bash"] {
		t.Errorf("the denials were not recorded: %v\n%s", denials, stderr)
	}

	bodies, _, _ = run("--no-claude-compat")
	if !strings.Contains(bodies, claudeSecret) {
		t.Fatalf("calibration: without Claude Code's files the secret must reach the model, or the test proves nothing")
	}
}
