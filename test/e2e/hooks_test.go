package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hook scripts below are written as teams write them for Claude Code: they read the
// event's JSON on stdin and answer with an exit code, stderr and stdout JSON.

const guardSh = `#!/bin/bash
# Refuse recursive forced deletes.
input=$(cat)
cmd=$(printf '%s' "$input" | jq -r '.tool_input.command // empty')
if printf '%s' "$cmd" | grep -Eq 'rm[[:space:]]+-[a-zA-Z]*r[a-zA-Z]*f|rm[[:space:]]+-[a-zA-Z]*f[a-zA-Z]*r'; then
  echo "Blocked: rm -rf is not allowed here; delete files one by one" >&2
  exit 2
fi
exit 0
`

const denyEnvPy = `#!/usr/bin/env python3
import json, sys

data = json.load(sys.stdin)
path = data.get("tool_input", {}).get("file_path", "")
if data.get("tool_name") == "Write" and path.endswith(".env"):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "secrets do not go in .env files",
    }}))
sys.exit(0)
`

const gofmtSh = `#!/bin/bash
file=$(jq -r '.tool_input.file_path // empty')
case "$file" in
  *.go) gofmt -w "$file" ;;
esac
`

const stopSh = `#!/bin/bash
input=$(cat)
if [ "$(printf '%s' "$input" | jq -r '.stop_hook_active')" = "true" ]; then
  exit 0
fi
echo '{"decision": "block", "reason": "Run the tests before you stop."}'
`

// hookEnv is the environment of a run whose hooks use the system's tools: jq, python3
// and gofmt from their usual places, whatever the caller's PATH holds.
func hookEnv(t *testing.T) []string {
	t.Helper()
	for _, tool := range []string{"jq", "python3", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("SEMA_CI") != "" {
				t.Fatalf("%s is needed by the hook acceptance tests and is missing: %v", tool, err)
			}
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	gofmt, err := exec.LookPath("gofmt")
	if err != nil {
		t.Fatalf("gofmt: %v", err)
	}
	return []string{"PATH=" + filepath.Dir(gofmt) + ":/usr/local/bin:/usr/bin:/bin"}
}

// hookSettings is a .sema/settings.json whose hooks run the scripts under .sema/hooks.
func hookSettings(t *testing.T, hooks map[string]any, extra map[string]any) string {
	t.Helper()
	doc := map[string]any{"hooks": hooks}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func commandHook(matcher, command string, timeout int) map[string]any {
	h := map[string]any{"type": "command", "command": command}
	if timeout > 0 {
		h["timeout"] = timeout
	}
	g := map[string]any{"hooks": []any{h}}
	if matcher != "" {
		g["matcher"] = matcher
	}
	return g
}

func bashOf(command string) toolCall {
	return toolCall{"Bash", map[string]any{"command": command}}
}

// hookTree is a workspace holding the hook scripts and settings.
func hookTree(t *testing.T, settings string, files map[string]string) string {
	t.Helper()
	all := map[string]string{
		".sema/hooks/guard.sh":     guardSh,
		".sema/hooks/deny_env.py":  denyEnvPy,
		".sema/hooks/gofmt.sh":     gofmtSh,
		".sema/hooks/stop.sh":      stopSh,
		".sema/settings.json":      settings,
		"victim/keep.txt":          "precious\n",
		"README.md":                "hi\n",
		".sema/hooks/.placeholder": "",
	}
	for k, v := range files {
		all[k] = v
	}
	root := writeTree(t, all)
	for _, s := range []string{"guard.sh", "deny_env.py", "gofmt.sh", "stop.sh"} {
		os.Chmod(filepath.Join(root, ".sema/hooks", s), 0o755)
	}
	return root
}

// TestHookGuardBlocksRmRf: a bash PreToolUse guard that exits 2 blocks `rm -rf` even
// under bypassPermissions, and the model reads its stderr. Calibrated: the same run
// without the hook deletes the directory, as plain bash does.
func TestHookGuardBlocksRmRf(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	settings := hookSettings(t, map[string]any{"PreToolUse": []any{commandHook("Bash", `"$CLAUDE_PROJECT_DIR"/.sema/hooks/guard.sh`, 0)}}, nil)
	script := scriptOf(t, bashOf("rm -rf victim"))

	root := hookTree(t, settings, nil)
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--trust-project", "--permission-mode", "bypassPermissions", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if !exists(filepath.Join(root, "victim/keep.txt")) {
		t.Fatal("the guard did not stop rm -rf")
	}
	d := o.denials()
	if len(d) != 1 || !strings.Contains(d[0]["reason"].(string), "Blocked: rm -rf is not allowed") {
		t.Fatalf("denials %v: the model must read the hook's stderr", d)
	}

	// Calibration: without the hook the same run deletes the directory.
	bare := hookTree(t, `{}`, nil)
	o = semaStream(t, bare, env, "", "run", "--model", "scripted/"+script, "--trust-project", "--permission-mode", "bypassPermissions", "go")
	if o.code != 0 || exists(filepath.Join(bare, "victim")) {
		t.Fatalf("calibration: exit %d, victim still there=%v\n%s", o.code, exists(filepath.Join(bare, "victim")), o.stderr)
	}
}

// TestHookPythonDenies: a Python PreToolUse hook's JSON deny refuses the Write of a
// .env file with its reason, and lets another Write through.
func TestHookPythonDenies(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	settings := hookSettings(t, map[string]any{"PreToolUse": []any{commandHook("Write|Edit", `python3 "$CLAUDE_PROJECT_DIR/.sema/hooks/deny_env.py"`, 0)}}, nil)
	root := hookTree(t, settings, nil)
	script := scriptOf(t, writeOf(".env", "TOKEN=x\n"), writeOf("notes.txt", "fine\n"))
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--trust-project", "--permission-mode", "acceptEdits", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if exists(filepath.Join(root, ".env")) || !exists(filepath.Join(root, "notes.txt")) {
		t.Fatalf(".env written=%v, notes.txt written=%v", exists(filepath.Join(root, ".env")), exists(filepath.Join(root, "notes.txt")))
	}
	d := o.denials()
	if len(d) != 1 || !strings.Contains(d[0]["reason"].(string), "secrets do not go in .env files") {
		t.Fatalf("denials %v", d)
	}
}

// TestHookGofmtAfterWrite: a PostToolUse hook formats the Go file the model wrote.
func TestHookGofmtAfterWrite(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	settings := hookSettings(t, map[string]any{"PostToolUse": []any{commandHook("Write|Edit|MultiEdit", `"$CLAUDE_PROJECT_DIR"/.sema/hooks/gofmt.sh`, 30)}}, nil)
	root := hookTree(t, settings, nil)
	ugly := "package main\nfunc main(){\nprintln( \"hi\" )\n}\n"
	script := scriptOf(t, writeOf("main.go", ugly))
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--trust-project", "--permission-mode", "acceptEdits", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	got, err := os.ReadFile(filepath.Join(root, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	if string(got) != want {
		t.Fatalf("main.go after the hook:\n%s\nwant:\n%s\nnotices: %v", got, want, o.final["notices"])
	}
}

// TestHookStopForcesAnotherTurn: a Stop hook answering decision "block" sends the model
// back to work once; with stop_hook_active it lets the run end.
func TestHookStopForcesAnotherTurn(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	settings := hookSettings(t, map[string]any{"Stop": []any{commandHook("", `"$CLAUDE_PROJECT_DIR"/.sema/hooks/stop.sh`, 0)}}, nil)
	root := hookTree(t, settings, nil)
	script := writeScript(t, `{"turns":[{"text":"all done"},{"text":"tests pass, now done"}]}`)
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--trust-project", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if o.final["num_turns"] != float64(2) || o.final["result"] != "tests pass, now done" {
		t.Fatalf("turns %v result %v: the Stop hook must force exactly one more turn", o.final["num_turns"], o.final["result"])
	}
}

// TestHookTimeoutFailsClosed: a PreToolUse hook that sleeps past its timeout refuses
// the call, and its process group — a child it left in the background included — is
// gone afterwards.
func TestHookTimeoutFailsClosed(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := `sleep 300 & echo $! > ` + pidFile + `; echo $$ >> ` + pidFile + `; sleep 300`
	settings := hookSettings(t, map[string]any{"PreToolUse": []any{commandHook("Write", cmd, 1)}}, nil)
	root := hookTree(t, settings, nil)
	script := scriptOf(t, writeOf("out.txt", "x"))
	start := time.Now()
	// The pid file lies outside the workspace: the hook writes it unsandboxed.
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--trust-project", "--permission-mode", "acceptEdits", "--sandbox", "off", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if time.Since(start) > 60*time.Second {
		t.Fatalf("the run took %v: the hook was not stopped at its timeout", time.Since(start))
	}
	if exists(filepath.Join(root, "out.txt")) {
		t.Fatal("the call ran although its hook timed out")
	}
	d := o.denials()
	if len(d) != 1 || !strings.Contains(d[0]["reason"].(string), "timed out") {
		t.Fatalf("denials %v", d)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Errorf("process %d of the hook's group is still alive (%v)", pid, err)
		}
	}
}

// TestHookAllowNeverBeatsDeny: a hook that allows every call cannot let through one a
// deny rule forbids.
func TestHookAllowNeverBeatsDeny(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	allow := `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"looks fine"}}'`
	settings := hookSettings(t, map[string]any{"PreToolUse": []any{commandHook("*", allow, 0)}},
		map[string]any{"permissions": map[string]any{"deny": []string{"Write(secret.txt)"}}})
	root := hookTree(t, settings, nil)
	script := scriptOf(t, writeOf("secret.txt", "x"), writeOf("open.txt", "y"))
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--trust-project", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if exists(filepath.Join(root, "secret.txt")) {
		t.Fatal("a hook's allow overrode a deny rule")
	}
	if !exists(filepath.Join(root, "open.txt")) {
		t.Fatalf("the hook's allow did not apply where no rule denies: %v", o.denials())
	}
}

// TestUntrustedProjectHooksDoNotRun: a cloned repository's hooks do not run until the
// operator trusts it, and the manifest says why; after `sema trust` they do.
func TestUntrustedProjectHooksDoNotRun(t *testing.T) {
	t.Parallel()
	env := append(hookEnv(t), home(t)...)
	marker := filepath.Join(t.TempDir(), "ran")
	settings := hookSettings(t, map[string]any{"UserPromptSubmit": []any{commandHook("", "touch "+marker, 0)}}, nil)
	root := hookTree(t, settings, nil)
	script := writeScript(t, `{"turns":[{"text":"finished"}]}`)
	o := semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--sandbox", "off", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if exists(marker) {
		t.Fatal("an untrusted workspace's hook ran")
	}
	applied := o.final["manifest"].(map[string]any)["settings"].([]any)
	entry := applied[len(applied)-1].(map[string]any)
	if entry["trusted"] != false || !strings.Contains(entry["why"].(string), "not trusted") || !strings.Contains(strings.Join(toStrings(entry["dropped"]), ","), "hooks") {
		t.Fatalf("manifest settings entry %v", entry)
	}

	if r := sema(t, root, env, "", "trust", "."); r.code != 0 {
		t.Fatalf("sema trust: %d %s", r.code, r.stderr)
	}
	o = semaStream(t, root, env, "", "run", "--model", "scripted/"+script, "--sandbox", "off", "go")
	if o.code != 0 || !exists(marker) {
		t.Fatalf("after sema trust: exit %d, hook ran=%v\n%s", o.code, exists(marker), o.stderr)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
