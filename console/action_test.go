package console

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestQuestionShowsTheAction(t *testing.T) {
	for _, c := range []struct {
		name, tool, input, kind string
		check                   func(q *question) bool
	}{
		{"bash", "Bash", `{"command":"rm -rf build && make","description":"rebuild"}`, "bash",
			func(q *question) bool { return q.Command == "rm -rf build && make" && q.Description == "rebuild" }},
		{"edit", "Edit", `{"file_path":"/w/a.go","old_string":"a\nb\nc","new_string":"a\nB\nc"}`, "edit",
			func(q *question) bool {
				return q.Path == "/w/a.go" && reflect.DeepEqual(q.Edits, [][]diffLine{{{"ctx", " ", "a"}, {"del", "-", "b"}, {"add", "+", "B"}, {"ctx", " ", "c"}}})
			}},
		{"edit that deletes", "Edit", `{"file_path":"/w/a.go","old_string":"x","new_string":""}`, "edit",
			func(q *question) bool {
				return reflect.DeepEqual(q.Edits, [][]diffLine{{{"del", "-", "x"}, {"add", "+", ""}}})
			}},
		{"multiedit", "MultiEdit", `{"file_path":"/w/a.go","edits":[{"old_string":"1","new_string":"2"},{"old_string":"3","new_string":"4"}]}`, "edit",
			func(q *question) bool { return len(q.Edits) == 2 && q.Edits[1][1].Text == "4" }},
		{"write", "Write", `{"file_path":"/w/new.txt","content":""}`, "write",
			func(q *question) bool { return q.Path == "/w/new.txt" && q.Content == "" }},
		{"bash without a command", "Bash", `{}`, "other", func(q *question) bool { return q.JSON == "{}" }},
		{"another tool", "WebFetch", `{"url":"https://example.com"}`, "other",
			func(q *question) bool { return q.JSON == "{\n  \"url\": \"https://example.com\"\n}" }},
		{"not JSON", "Write", `nope`, "other", func(q *question) bool { return q.JSON == "nope" }},
	} {
		q := questionOf(c.tool, json.RawMessage(c.input), "msg", "tool_permission")
		if q.Kind != c.kind || !c.check(q) {
			t.Errorf("%s: %+v", c.name, q)
		}
	}
}

func TestTitleIsThePromptsFirstLine(t *testing.T) {
	long := ""
	for range 30 {
		long += "word "
	}
	for in, want := range map[string]string{
		"fix the test\nit fails on CI": "fix the test",
		"  \n  padded  \nrest":         "padded",
		"":                             "(no prompt)",
		long:                           long[:99] + "…",
	} {
		if got := title(in); got != want {
			t.Errorf("title(%q) = %q, want %q", in, got, want)
		}
	}
}
