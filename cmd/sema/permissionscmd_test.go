package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
)

// claudeRules is a workspace's .claude/settings.json of each kind of rule.
const claudeRules = `{"permissions": {"deny": ["Read(./secrets/**)"], "ask": ["Bash(git push:*)"], "allow": ["Bash(npm test:*)"]}}`

// `sema permissions` lists every rule with the file it came from and whether it applied:
// an untrusted workspace's allow rule is listed, not applied, and names how to trust it;
// the user's ~/.claude/settings.json and the rule flags are sources too.
func TestPermissionsListsRulesWithTheirSources(t *testing.T) {
	w := newCommandsWorld(t)
	project := writeFile(t, filepath.Join(w.root, ".claude", "settings.json"), claudeRules)
	user := writeFile(t, filepath.Join(w.home, ".claude", "settings.json"), `{"permissions": {"deny": ["WebFetch"]}}`)

	code, out, errs := w.run(t, "", "permissions", "--cwd", w.root, "--home", w.state, "--disallowed-tools", "Bash(rm:*)")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"DENY   Read(./secrets/**)  " + project + ", project",
		"ASK    Bash(git push:*)",
		"DENY   WebFetch            " + user + ", user",
		"DENY   Bash(rm:*)          --disallowed-tools",
		"not applied: the workspace is not trusted",
		"--trust-project",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the listing lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = w.run(t, "", "permissions", "--cwd", w.root, "--home", w.state, "--json", "--trust-project")
	var rep agent.PermissionReport
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, r := range rep.Rules {
		if !r.Applied {
			t.Errorf("trusted, %s from %s did not apply", r.Rule, r.Path)
		}
	}

	code, out, _ = w.run(t, "", "permissions", "--cwd", w.root, "--home", w.state, "--no-claude-compat")
	if code != exitOK || strings.Contains(out, "Read(./secrets/**)") || strings.Contains(out, "WebFetch") {
		t.Errorf("--no-claude-compat still read Claude Code's files:\n%s", out)
	}
}

// `sema permissions check` answers as the gate would, names the rule and its file, says
// what trust would change, and follows --permission-mode.
func TestPermissionsCheck(t *testing.T) {
	w := newCommandsWorld(t)
	project := writeFile(t, filepath.Join(w.root, ".claude", "settings.json"), claudeRules)
	check := func(args ...string) agent.PermissionCheck {
		t.Helper()
		all := append([]string{"permissions", "check", "--cwd", w.root, "--home", w.state, "--json"}, args...)
		code, out, errs := w.run(t, "", all...)
		var rep agent.PermissionReport
		if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || rep.Check == nil {
			t.Fatalf("%v: exit %d: %v\n%s\n%s", args, code, err, out, errs)
		}
		return *rep.Check
	}

	c := check("Read(secrets/key.txt)")
	if c.Decision.Behavior != permission.Deny || c.Decision.Rule != "Read(./secrets/**)" || len(c.Matching) != 1 || c.Matching[0].Path != project {
		t.Errorf("the secret: %+v", c)
	}
	if c := check("Read(secrets/key.txt)", "--permission-mode", "bypassPermissions"); c.Decision.Behavior != permission.Deny {
		t.Errorf("a deny rule holds in every mode: %+v", c.Decision)
	}
	if c := check("Bash(git push origin main)"); c.Decision.Behavior != permission.Ask || c.Decision.Rule != "Bash(git push:*)" {
		t.Errorf("git push: %+v", c.Decision)
	}
	c = check("Bash(npm test)")
	if c.Decision.Behavior != permission.Ask || len(c.NotApplied) != 1 || c.NotApplied[0].Rule != "Bash(npm test:*)" {
		t.Errorf("untrusted npm test: %+v", c)
	}
	if c := check("Bash(npm test)", "--trust-project"); c.Decision.Behavior != permission.Allow || c.Decision.Rule != "Bash(npm test:*)" {
		t.Errorf("trusted npm test: %+v", c.Decision)
	}
	if c := check("Edit(src/a.go)", "--permission-mode", "acceptEdits"); c.Decision.Behavior != permission.Allow || c.Decision.DecidedBy != permission.LayerMode {
		t.Errorf("acceptEdits: %+v", c.Decision)
	}
	if c := check("Edit(src/a.go)"); c.Decision.Behavior != permission.Ask {
		t.Errorf("default mode edit: %+v", c.Decision)
	}
	if c := check("mcp__github__create_issue", "--allowed-tools", "mcp__github"); c.Decision.Behavior != permission.Allow || c.Matching[0].Rule != "mcp__github" {
		t.Errorf("mcp: %+v", c)
	}

	code, out, errs := w.run(t, "", "permissions", "check", "--cwd", w.root, "--home", w.state, "Bash(git push origin main)")
	for _, want := range []string{"mode default: ASK", "The ask rule Bash(git push:*) (" + project + ", project) names the call."} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("the text lacks %q: exit %d\n%s\n%s", want, code, out, errs)
		}
	}
	if code, _, errs := w.run(t, "", "permissions", "check", "--cwd", w.root, "Bash(git push"); code != exitUsage || !strings.Contains(errs, codeCheckInvalid) {
		t.Errorf("an unclosed call: exit %d %s", code, errs)
	}
}

// A check runs nothing: a trusted workspace's PreToolUse hook, which a run would start
// before the call, is counted and named as not run, and leaves no trace.
func TestPermissionsCheckRunsNoHook(t *testing.T) {
	w := newCommandsWorld(t)
	marker := filepath.Join(w.root, "hook-ran")
	writeFile(t, filepath.Join(w.root, ".claude", "settings.json"),
		`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "touch `+marker+`"}]}]}}`)
	code, out, errs := w.run(t, "", "permissions", "check", "--cwd", w.root, "--home", w.state, "--trust-project", "--json", "Bash(ls)")
	var rep agent.PermissionReport
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || rep.Check == nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	if rep.PreToolUseHooks != 1 || !strings.Contains(strings.Join(rep.Check.Assumed, " "), "PreToolUse hooks were not run") {
		t.Errorf("the hook is not counted and named: %d %v", rep.PreToolUseHooks, rep.Check.Assumed)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the check ran the hook")
	}
}
