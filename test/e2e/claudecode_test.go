package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// A Claude Code setup, as a person has it, run through `sema -p` with no flag that asks
// for Claude Code's files: CLAUDE.md with an import, .claude/settings.json with a deny
// rule, an allow rule, an env, a model and a PreToolUse hook (a shell script using
// jq), .claude/agents, .claude/commands and .mcp.json (the npm everything server).

// logHookSh is a PreToolUse hook as teams write them for Claude Code: it reads the
// event's JSON with jq, logs the command, and blocks one it does not like.
const logHookSh = `#!/bin/bash
input=$(cat)
cmd=$(printf '%s' "$input" | jq -r '.tool_input.command // empty')
printf '%s\n' "$cmd" >> "$CLAUDE_PROJECT_DIR/hook.log"
case "$cmd" in
  *forbidden*) echo "Blocked by the team's hook" >&2; exit 2 ;;
esac
exit 0
`

// claudeSetup is what a test's Claude Code files are made of.
type claudeSetup struct {
	// jq: the hook is declared (jq is installed).
	jq bool
	// mcp is the npm everything server's program; "" leaves .mcp.json out.
	mcp string
}

func newClaudeSetup(t *testing.T) claudeSetup {
	t.Helper()
	var s claudeSetup
	ci := os.Getenv("SEMA_CI") != ""
	if _, err := exec.LookPath("jq"); err == nil {
		s.jq = true
	} else if ci {
		t.Fatalf("SEMA_CI is set and jq, which the hook uses, is missing: %v", err)
	} else {
		skipPart(t, "jq is not installed: the hook part of the Claude Code setup is left out and not checked")
	}
	if bin := os.Getenv("SEMA_TEST_MCP_NPM_BIN"); bin != "" {
		s.mcp = filepath.Join(bin, "mcp-server-everything")
	} else if ci {
		t.Fatal("SEMA_CI is set but SEMA_TEST_MCP_NPM_BIN is not: .ci/run installs the npm MCP servers")
	} else {
		skipPart(t, "the npm MCP servers are not installed (SEMA_TEST_MCP_NPM_BIN unset): the .mcp.json part is left out and not checked; .ci/run installs them")
	}
	return s
}

// skipPart says, on stderr even without -v, which part of a test was left out and why.
func skipPart(t *testing.T, why string) {
	t.Helper()
	t.Log(why)
	fmt.Fprintf(os.Stderr, "%s: %s\n", t.Name(), why)
}

// settings is a Claude Code settings.json; hookPath is the hook's command.
func (s claudeSetup) settings(t *testing.T, hookPath string, model bool) string {
	doc := map[string]any{
		"permissions": map[string]any{
			"deny":  []string{"Read(./secrets/**)"},
			"allow": []string{"mcp__everything"},
		},
		"env": map[string]string{"TEAM_GREETING": "hello-from-settings"},
		// Claude Code's interface keys are known and ignored.
		"statusLine": map[string]any{"type": "command", "command": "echo hi"},
	}
	if model {
		doc["model"] = "claude-sonnet-4-5"
	}
	if s.jq {
		doc["hooks"] = map[string]any{"PreToolUse": []any{commandHook("Bash", hookPath, 10)}}
	}
	return mustJSON(t, doc)
}

// files are the setup's files under dir (the workspace, or the home directory for the
// user's level): its instruction file and import, settings, hook, agent and command.
func (s claudeSetup) files(t *testing.T, dir, instructions, hookPath string, model bool) map[string]string {
	files := map[string]string{
		".claude/settings.json":   s.settings(t, hookPath, model),
		".claude/agents/scout.md": "---\nname: scout\ndescription: SCOUT-AGENT finds things.\n---\nYou find things.\n",
		".claude/commands/greet.md": "---\ndescription: Greet someone\n---\n" +
			"COMMAND-MARKER: greet $ARGUMENTS, then read secrets/key.txt and run the commands.\n",
	}
	if s.jq {
		files[".claude/hooks/log.sh"] = logHookSh
	}
	for k, v := range map[string]string{"CLAUDE.md": instructions} {
		files[k] = v
	}
	return files
}

// claudeTurns are the model's turns: a read of the secret, a command that shows the
// settings' env, one the hook blocks, and a call of the MCP server's echo.
func claudeTurns(t *testing.T, root string) []anthropictest.Turn {
	return []anthropictest.Turn{
		{ToolCalls: []anthropictest.ToolCall{
			{ID: "read", Name: "Read", Input: mustJSON(t, map[string]string{"file_path": filepath.Join(root, "secrets", "key.txt")})},
			{ID: "env", Name: "Bash", Input: mustJSON(t, map[string]string{"command": `echo "greeting:$TEAM_GREETING"`})},
			{ID: "hooked", Name: "Bash", Input: mustJSON(t, map[string]string{"command": "echo forbidden"})},
			{ID: "mcp", Name: "mcp__everything__echo", Input: mustJSON(t, map[string]string{"message": "MCP-ECHO"})}}},
		{Text: "done"},
	}
}

// claudeRun is what one run showed: the requests' bodies, the result, the tool results
// by id.
type claudeRun struct {
	first, all string
	model      string
	result     map[string]any
	results    map[string]string
	hookLog    string
	stderr     string
}

func runClaudeSetup(t *testing.T, root string, env []string, args ...string) claudeRun {
	t.Helper()
	srv := anthropictest.NewServer(t, claudeTurns(t, root)...)
	env = append(env, "ANTHROPIC_API_KEY=sk-ant-e2e-test", "ANTHROPIC_BASE_URL="+srv.URL())
	r := sema(t, root, env, "", append(append([]string{"-p", "--output-format", "json"}, args...), "/greet world")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2\n%s", len(reqs), r.stderr)
	}
	out := claudeRun{first: string(reqs[0].Raw), result: jsonResult(t, r.stdout), results: map[string]string{}, stderr: r.stderr}
	out.model, _ = reqs[0].Body["model"].(string)
	for _, req := range reqs {
		out.all += string(req.Raw)
	}
	var second struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := reqs[1].Decode(&second); err != nil {
		t.Fatal(err)
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	json.Unmarshal(second.Messages[len(second.Messages)-1].Content, &blocks)
	for _, b := range blocks {
		out.results[b.ToolUseID] = string(b.Content)
	}
	log, _ := os.ReadFile(filepath.Join(root, "hook.log"))
	out.hookLog = string(log)
	return out
}

// noticeCodes are the result's notices' codes and messages, one a line.
func (c claudeRun) notices() string {
	var b strings.Builder
	list, _ := c.result["notices"].([]any)
	for _, n := range list {
		m, _ := n.(map[string]any)
		b.WriteString(m["code"].(string) + ": " + m["message"].(string) + "\n")
	}
	return b.String()
}

// checkAlways are the facts of every run: the command expanded, the instructions and
// their import in the system prompt, the agent in the Task tool, the deny rule kept the
// secret from the model with a recorded denial.
func (c claudeRun) checkAlways(t *testing.T, instructionMarkers ...string) {
	t.Helper()
	for _, want := range append(instructionMarkers, "COMMAND-MARKER: greet world", "SCOUT-AGENT") {
		if !strings.Contains(c.first, want) {
			t.Errorf("the first request lacks %q", want)
		}
	}
	if strings.Contains(c.all, claudeSecret) {
		t.Error("the secret a deny rule protects reached the model")
	}
	denied := false
	for _, d := range c.result["permission_denials"].([]any) {
		if m := d.(map[string]any); m["tool"] == "Read" || m["tool_name"] == "Read" {
			denied = true
		}
	}
	if !denied {
		t.Errorf("the denied read is not in permission_denials: %v", c.result["permission_denials"])
	}
}

// checkApplied are the facts of a run whose every file applies: the env, the hook, the
// MCP server, the model.
func (c claudeRun) checkApplied(t *testing.T, s claudeSetup, model string) {
	t.Helper()
	if !strings.Contains(c.results["env"], "greeting:hello-from-settings") {
		t.Errorf("the settings' env did not reach the command: %s", c.results["env"])
	}
	if s.jq {
		if !strings.Contains(c.hookLog, "echo forbidden") || !strings.Contains(c.results["hooked"], "Blocked by the team's hook") {
			t.Errorf("the hook did not run or did not block: log %q, result %s", c.hookLog, c.results["hooked"])
		}
	}
	if s.mcp != "" && !strings.Contains(c.results["mcp"], "MCP-ECHO") {
		t.Errorf("the .mcp.json server's echo did not answer: %s\n%s", c.results["mcp"], c.notices())
	}
	if model != "" && c.model != model {
		t.Errorf("the model is %q, want the settings' %q", c.model, model)
	}
}

// The workspace's Claude Code setup, with no flags: the deny rule, CLAUDE.md and its
// import, the agent and the command apply; the hook, env, allow rule, model and MCP
// server do not, and each is named in a notice that says how to trust the workspace.
// Trusted (sema trust, then again no flags), every file applies.
func TestClaudeCodeProjectSetupWorksUnchanged(t *testing.T) {
	t.Parallel()
	s := newClaudeSetup(t)
	files := s.files(t, "", "Project rules: PROJECT-MARKER.\nSee @docs/style.md for the style.\n", `"$CLAUDE_PROJECT_DIR"/.claude/hooks/log.sh`, true)
	files["docs/style.md"] = "STYLE-MARKER: tabs, not spaces.\n"
	files["secrets/key.txt"] = claudeSecret + "\n"
	if s.mcp != "" {
		files[".mcp.json"] = mustJSON(t, map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": s.mcp, "args": []string{"stdio"}}}})
	}
	dir := writeTree(t, files)
	root, _ := filepath.EvalSymlinks(dir)
	os.Chmod(filepath.Join(root, ".claude", "hooks", "log.sh"), 0o755)
	env := append(hookEnvOrPath(t), home(t)...)

	c := runClaudeSetup(t, root, append(env, "SEMA_MODEL=anthropic/claude-haiku-4-5"))
	c.checkAlways(t, "PROJECT-MARKER", "STYLE-MARKER")
	settingsFile := filepath.Join(root, ".claude", "settings.json")
	if found, applied := c.manifestRule("Read(./secrets/**)", "project", settingsFile); !found || !applied {
		t.Errorf("the manifest does not record the deny rule as the project's, applied: %v", c.result["manifest"])
	}
	if found, applied := c.manifestRule("mcp__everything", "project", settingsFile); !found || applied {
		t.Errorf("the manifest does not record the untrusted allow rule as read and not applied")
	}
	if strings.Contains(c.results["env"], "hello-from-settings") || c.hookLog != "" {
		t.Errorf("an untrusted workspace's env or hook applied: %s %q", c.results["env"], c.hookLog)
	}
	notices := c.notices()
	for _, want := range []string{"config.project_settings_untrusted", filepath.Join(root, ".claude", "settings.json"), "permissions.allow", "env", "model", "--trust-project", "sema trust"} {
		if !strings.Contains(notices, want) {
			t.Errorf("the notices do not name %q:\n%s", want, notices)
		}
	}
	if s.jq && !strings.Contains(notices, "hooks") {
		t.Errorf("the notice does not name the hooks:\n%s", notices)
	}
	if s.mcp != "" && (!strings.Contains(notices, "mcp.project_untrusted") || !strings.Contains(notices, "everything")) {
		t.Errorf("the untrusted MCP server is not named:\n%s", notices)
	}

	// Trusted the way a person does it once, then no flags again.
	if r := sema(t, root, env, "", "trust", root); r.code != 0 {
		t.Fatalf("sema trust: exit %d\n%s", r.code, r.stderr)
	}
	c = runClaudeSetup(t, root, env)
	c.checkAlways(t, "PROJECT-MARKER", "STYLE-MARKER")
	c.checkApplied(t, s, "claude-sonnet-4-5")
	if strings.Contains(c.notices(), "untrusted") {
		t.Errorf("a trusted workspace still has untrusted notices:\n%s", c.notices())
	}
}

// The user's own Claude Code setup under ~/.claude — settings with a deny rule, env and a
// hook, CLAUDE.md with an "@~/.claude/…" import, an agent, a command — applies in any
// workspace with no flags and no trust: it is the person's, not a repository's.
func TestClaudeCodeUserSetupWorksUnchanged(t *testing.T) {
	t.Parallel()
	s := newClaudeSetup(t)
	s.mcp = "" // Claude Code keeps a person's MCP servers in ~/.claude.json, which sema does not read
	homeDir, _ := filepath.EvalSymlinks(t.TempDir())
	files := s.files(t, homeDir, "User rules: USER-MARKER.\n@~/.claude/extra.md\n", filepath.Join(homeDir, ".claude", "hooks", "log.sh"), false)
	files[".claude/extra.md"] = "EXTRA-MARKER from an import in the home directory.\n"
	files[".claude/CLAUDE.md"] = files["CLAUDE.md"]
	delete(files, "CLAUDE.md")
	for name, body := range files {
		p := filepath.Join(homeDir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := writeTree(t, map[string]string{"secrets/key.txt": claudeSecret + "\n", "README.md": "hi\n"})
	root, _ := filepath.EvalSymlinks(dir)
	env := append(hookEnvOrPath(t), append(home(t), "HOME="+homeDir, "SEMA_MODEL=anthropic/claude-sonnet-4-5")...)

	c := runClaudeSetup(t, root, env)
	c.checkAlways(t, "USER-MARKER", "EXTRA-MARKER")
	c.checkApplied(t, s, "")
	if found, applied := c.manifestRule("Read(./secrets/**)", "user", filepath.Join(homeDir, ".claude", "settings.json")); !found || !applied {
		t.Errorf("the manifest does not record the user's deny rule: %v", c.result["manifest"])
	}
	if strings.Contains(c.notices(), "untrusted") {
		t.Errorf("the user's own files are noticed as untrusted:\n%s", c.notices())
	}

	// Calibration: with --no-claude-compat none of it applies.
	os.Remove(filepath.Join(root, "hook.log"))
	srv := anthropictest.NewServer(t, claudeTurns(t, root)...)
	r := sema(t, root, append(env, "ANTHROPIC_API_KEY=sk-ant-e2e-test", "ANTHROPIC_BASE_URL="+srv.URL()), "", "-p", "--no-claude-compat", "--output-format", "json", "hello")
	if r.code != 0 {
		t.Fatalf("--no-claude-compat: exit %d\n%s", r.code, r.stderr)
	}
	var all string
	for _, req := range srv.Requests() {
		all += string(req.Raw)
	}
	if !strings.Contains(all, claudeSecret) || strings.Contains(all, "USER-MARKER") {
		t.Errorf("calibration: without Claude Code's files the secret must reach the model and the user's CLAUDE.md must not")
	}
}

// hookEnvOrPath is the PATH of a run whose hook uses jq and bash from the usual places.
func hookEnvOrPath(t *testing.T) []string {
	t.Helper()
	gofmt, err := exec.LookPath("gofmt")
	if err != nil {
		return []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	}
	return []string{"PATH=" + filepath.Dir(gofmt) + ":/usr/local/bin:/usr/bin:/bin"}
}

// manifestRule reports whether the result's manifest records rule from a settings file
// of layer at path, and whether it applied.
func (c claudeRun) manifestRule(rule, layer, path string) (found, applied bool) {
	m, _ := c.result["manifest"].(map[string]any)
	files, _ := m["settings"].([]any)
	for _, f := range files {
		fm, _ := f.(map[string]any)
		if fm["layer"] != layer || fm["path"] != path {
			continue
		}
		rules, _ := fm["rules"].([]any)
		for _, r := range rules {
			rm, _ := r.(map[string]any)
			if rm["rule"] == rule {
				a, _ := rm["applied"].(bool)
				return true, a
			}
		}
	}
	return false, false
}
