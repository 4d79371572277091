package tui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
)

// TestActionLines: the dialog shows every line of a Bash command, an edit's removed and
// added lines, a plan's lines, and never an escape sequence from the model.
func TestActionLines(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		tool, input string
		want        []string
	}{
		{"Bash", `{"command":"make \\\n  all` + long + `"}`, []string{"$ make \\", "    all" + long}},
		{"Edit", `{"file_path":"a.go","old_string":"a\nb","new_string":"c"}`, []string{"path: a.go", "- a", "- b", "+ c"}},
		{"ExitPlanMode", `{"plan":"1. read\n2. fix"}`, []string{"1. read", "2. fix"}},
		{"Bash", `{"command":"echo \u001b[2Jgone"}`, []string{`$ echo \x1b[2Jgone`}},
		// What the diff alone would hide is said: every occurrence, and each edit of many.
		{"Edit", `{"file_path":"a.go","old_string":"a","new_string":"b","replace_all":true}`,
			[]string{"path: a.go", "replaces every occurrence, not only the first", "- a", "+ b"}},
		{"MultiEdit", `{"file_path":"a.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d","replace_all":true}]}`,
			[]string{"path: a.go", "edit 1 of 2", "- a", "+ b", "edit 2 of 2: every occurrence, not only the first", "- c", "+ d"}},
		// A tool the dialog has no shape for shows its whole input.
		{"NotebookEdit", `{"notebook_path":"n.ipynb","new_source":"rm()"}`,
			[]string{"{", `  "new_source": "rm()",`, `  "notebook_path": "n.ipynb"`, "}"}},
	} {
		var got []string
		for _, l := range actionLines(tc.tool, json.RawMessage(tc.input)) {
			got = append(got, l.text)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s %s:\n got %q\nwant %q", tc.tool, tc.input, got, tc.want)
		}
	}
}

// TestRule: the words and the session's key of "allow always" (matched as the exact
// string, never as rule syntax; what a settings file keeps is permission.NarrowRule).
func TestRule(t *testing.T) {
	for input, want := range map[string]string{
		`{"tool":"Bash","input":{"command":"go test ./..."}}`: "Bash(go test ./...)",
		`{"tool":"Write","input":{"file_path":"docs/a.md"}}`:  "Write(docs/a.md)",
		`{"tool":"WebFetch","input":{"url":"https://x"}}`:     "WebFetch",
	} {
		var req permission.ApprovalRequest
		if err := json.Unmarshal([]byte(input), &req); err != nil {
			t.Fatal(err)
		}
		if got := Rule(req); got != want {
			t.Errorf("Rule(%s) = %q, want %q", input, got, want)
		}
	}
}
