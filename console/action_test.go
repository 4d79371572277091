package console

import (
	"encoding/json"
	"html/template"
	"reflect"
	"strings"
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
				return q.Path == "/w/a.go" && reflect.DeepEqual(q.Edits, []editShown{{Lines: []diffLine{{"ctx", " ", "a"}, {"del", "-", "b"}, {"add", "+", "B"}, {"ctx", " ", "c"}}}})
			}},
		{"edit that deletes", "Edit", `{"file_path":"/w/a.go","old_string":"x","new_string":""}`, "edit",
			func(q *question) bool {
				return reflect.DeepEqual(q.Edits, []editShown{{Lines: []diffLine{{"del", "-", "x"}, {"add", "+", ""}}}})
			}},
		{"multiedit", "MultiEdit", `{"file_path":"/w/a.go","edits":[{"old_string":"1","new_string":"2"},{"old_string":"3","new_string":"4","replace_all":true}]}`, "edit",
			func(q *question) bool {
				return len(q.Edits) == 2 && q.Edits[1].Lines[1].Text == "4" && !q.Edits[0].ReplaceAll && q.Edits[1].ReplaceAll
			}},
		// Every occurrence, not the one a person reads in the diff: it is said.
		{"edit of every occurrence", "Edit", `{"file_path":"/w/a.go","old_string":"x","new_string":"y","replace_all":true}`, "edit",
			func(q *question) bool {
				return len(q.Edits) == 1 && q.Edits[0].ReplaceAll && strings.Contains(q.JSON, "replace_all")
			}},
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

// The page says what the diff alone does not: an edit of every occurrence, and the whole
// input below the diff, so no field of the call goes unseen.
func TestActionPartShowsEveryOccurrenceAndTheInput(t *testing.T) {
	tmpl, err := template.New("").ParseFS(assets, "templates/parts.html")
	if err != nil {
		t.Fatal(err)
	}
	q := questionOf("Edit", json.RawMessage(`{"file_path":"/w/a.go","old_string":"x","new_string":"y","replace_all":true}`), "msg", "tool_permission")
	var out strings.Builder
	if err := tmpl.ExecuteTemplate(&out, "action", q); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	if !strings.Contains(html, "Replaces every occurrence") || !strings.Contains(html, "replace_all") || !strings.Contains(html, "The whole input") {
		t.Errorf("the action of an edit of every occurrence:\n%s", html)
	}
	q = questionOf("Edit", json.RawMessage(`{"file_path":"/w/a.go","old_string":"x","new_string":"y"}`), "msg", "tool_permission")
	out.Reset()
	if err := tmpl.ExecuteTemplate(&out, "action", q); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Replaces every occurrence") {
		t.Errorf("an edit of one occurrence says every:\n%s", out.String())
	}
}
