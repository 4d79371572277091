package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// claudeResultFields are the fields of Claude Code's result message, present in every
// result sema prints as JSON.
var claudeResultFields = []string{"type", "subtype", "is_error", "duration_ms", "duration_api_ms", "num_turns", "session_id",
	"total_cost_usd", "usage", "permission_denials"}

// lastResult is the last JSON line of out whose type is result.
func lastResult(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var m map[string]any
		if json.Unmarshal([]byte(lines[i]), &m) == nil && m["type"] == "result" {
			return m
		}
	}
	t.Fatalf("no result object in %q", out)
	return nil
}

func hasClaudeFields(t *testing.T, what string, res map[string]any) {
	t.Helper()
	for _, k := range claudeResultFields {
		if _, ok := res[k]; !ok {
			t.Errorf("%s: the result has no %s: %v", what, k, res)
		}
	}
	if _, ok := res["status"]; !ok {
		t.Errorf("%s: sema's own status is gone: %v", what, res)
	}
}

// The result object has Claude Code's fields in json and stream-json, on success, on a
// denial and on a refused command line, with sema's own beside them.
func TestResultHasClaudeCodeFields(t *testing.T) {
	w := newPromptWorld(t)
	for _, format := range []string{"json", "stream-json"} {
		code, out, errs := w.run(t, strings.NewReader(""), "-p", "hello", "--output-format", format)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s", format, code, errs)
		}
		res := lastResult(t, out)
		hasClaudeFields(t, format, res)
		if res["subtype"] != "success" || res["is_error"] != false {
			t.Errorf("%s: subtype %v is_error %v", format, res["subtype"], res["is_error"])
		}
	}
	code, out, _ := w.run(t, strings.NewReader(""), "-p", "hello", "--output-format", "json", "--on-ask", "sometimes")
	if code != exitUsage {
		t.Fatalf("a bad --on-ask: exit %d", code)
	}
	res := lastResult(t, out)
	hasClaudeFields(t, "a refusal", res)
	if res["subtype"] != "error_during_execution" || res["is_error"] != true {
		t.Errorf("a refusal: subtype %v is_error %v", res["subtype"], res["is_error"])
	}
}

// Claude Code's flags work as written: -c and -r continue a session,
// --dangerously-skip-permissions is bypassPermissions, --allowedTools and
// --disallowedTools are the rule flags (a denial reads as Claude Code's, tool_name and
// tool_input), --append-system-prompt-file adds a file's text.
func TestClaudeCodeFlags(t *testing.T) {
	w := newPromptWorld(t)
	json1 := func(args ...string) map[string]any {
		t.Helper()
		code, out, errs := w.run(t, strings.NewReader(""), append(args, "--output-format", "json")...)
		if code != exitOK {
			t.Fatalf("%q: exit %d\n%s\n%s", args, code, out, errs)
		}
		return lastResult(t, out)
	}
	first := json1("-p", "hello")
	id := first["session_id"].(string)
	if got := json1("-p", "-c", "go on")["session_id"]; got != id {
		t.Errorf("-c continued %v, want %s", got, id)
	}
	if got := json1("-p", "-r", id, "go on")["session_id"]; got != id {
		t.Errorf("-r %s continued %v", id, got)
	}
	mode := func(res map[string]any) any {
		return res["manifest"].(map[string]any)["permission_mode"].(map[string]any)["effective"]
	}
	if got := mode(json1("-p", "hello", "--dangerously-skip-permissions")); got != "bypassPermissions" {
		t.Errorf("--dangerously-skip-permissions ran in %v", got)
	}

	write := "scripted/" + writeFile(t, filepath.Join(t.TempDir(), "write.json"),
		`{"turns":[{"tool_calls":[{"name":"Write","input":{"file_path":"x.txt","content":"x"}}]},{"text":"done"}]}`)
	for _, spelling := range []string{"--disallowedTools", "--disallowed-tools"} {
		res := json1("-p", "write x", "--model", write, "--permission-mode", "acceptEdits", spelling, "Write")
		denials, _ := res["permission_denials"].([]any)
		if len(denials) != 1 || denials[0].(map[string]any)["tool_name"] != "Write" || denials[0].(map[string]any)["tool_input"] == nil {
			t.Errorf("%s Write: denials %v", spelling, res["permission_denials"])
		}
	}
	for _, spelling := range []string{"--allowedTools", "--allowed-tools"} {
		res := json1("-p", "write x", "--model", write, "--on-ask", "deny", spelling, "Write")
		if denials, _ := res["permission_denials"].([]any); len(denials) != 0 {
			t.Errorf("%s Write: the write was denied: %v", spelling, denials)
		}
	}

	chars := func(res map[string]any) float64 {
		return res["manifest"].(map[string]any)["system_prompt_chars"].(float64)
	}
	extra := strings.Repeat("Always answer in French. ", 20)
	file := writeFile(t, filepath.Join(t.TempDir(), "extra.md"), extra+"\n")
	if with, without := chars(json1("-p", "hello", "--append-system-prompt-file", file)), chars(json1("-p", "hello")); with-without < float64(len(extra)) {
		t.Errorf("--append-system-prompt-file added %v characters, want the file's %d", with-without, len(extra))
	}
}

// What sema does not do is refused by name, with sema's way when it has one.
func TestClaudeCodeFlagsRefused(t *testing.T) {
	w := newPromptWorld(t)
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"-p", "hello", "-w"}, "is not in a git repository (a worktree is a checkout of one)"},
		{[]string{"-p", "hello", "--worktree=../up"}, "(worktree.name_invalid)"},
		{[]string{"-p", "hello", "--agents", "{}"}, ".sema/agents/NAME.md"},
		{[]string{"-p", "hello", "--permission-prompt-tool", "mcp__auth__ok"}, "--on-ask prompt"},
		{[]string{"-p", "hello", "--dangerously-skip-permissions", "--permission-mode", "plan"}, "give one"},
		{[]string{"-p", "hello", "--append-system-prompt-file", "/nonexistent/x.md"}, "(config.prompt_file_invalid)"},
		{[]string{"-p", "hello", "--append-system-prompt-file", "/nonexistent/x.md", "--append-system-prompt", "x"}, "both give the text"},
	}
	for _, c := range cases {
		code, _, errs := w.run(t, strings.NewReader(""), c.args...)
		if code != exitUsage || !strings.Contains(errs, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 saying %q", c.args, code, errs, c.says)
		}
	}
}

// "-w NAME" names the worktree, as Claude Code reads it; a word that cannot be a name
// stays where it was (a prompt), and -w=NAME and -- are left alone.
func TestWorktreeNameFromTheNextWord(t *testing.T) {
	for _, c := range []struct{ in, out []string }{
		{[]string{"-p", "-w", "fix-1", "do it"}, []string{"-p", "--worktree=fix-1", "do it"}},
		{[]string{"--worktree", "fix-1"}, []string{"--worktree=fix-1"}},
		{[]string{"-p", "-w", "fix the bug"}, []string{"-p", "-w", "fix the bug"}},
		{[]string{"-p", "-w", "--model", "x"}, []string{"-p", "-w", "--model", "x"}},
		{[]string{"-w=fix-1", "x"}, []string{"-w=fix-1", "x"}},
		{[]string{"-p", "--", "-w", "fix-1"}, []string{"-p", "--", "-w", "fix-1"}},
		{[]string{"-w"}, []string{"-w"}},
		{[]string{"-p", "-w", "feature/login", "go"}, []string{"-p", "--worktree=feature/login", "go"}},
	} {
		if got := worktreeName(c.in); !slices.Equal(got, c.out) {
			t.Errorf("%q became %q, want %q", c.in, got, c.out)
		}
	}
}
