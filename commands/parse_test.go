package commands

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sema-agent/sema"
)

func TestParseFrontMatter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want Command
	}{
		{"no front matter", "Review the code.\n", Command{Body: "Review the code.\n"}},
		{"empty front matter", "---\n---\nbody", Command{Body: "body"}},
		{"a body that only starts with dashes", "----\nbody", Command{Body: "----\nbody"}},
		{"plain values", "---\ndescription: Review a pull request\nargument-hint: [pr-number] [priority]\nmodel: anthropic/claude-haiku-4-5\n---\nReview $1.\n", Command{
			Description: "Review a pull request", ArgumentHint: "[pr-number] [priority]", Model: "anthropic/claude-haiku-4-5", Body: "Review $1.\n"}},
		{"quoted values", "---\ndescription: \"Fix issue #123: \\\"quoted\\\"\"\nargument-hint: 'it''s [x]'\n---\nb", Command{
			Description: `Fix issue #123: "quoted"`, ArgumentHint: "it's [x]", Body: "b"}},
		{"a comment in a plain value, as in YAML", "---\ndescription: Fix issue #123\n# a whole-line comment\n---\nb", Command{Description: "Fix issue", Body: "b"}},
		{"a hash without a blank before it is text", "---\ndescription: C# code\n---\nb", Command{Description: "C# code", Body: "b"}},
		{"allowed-tools as one string", "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Read\n---\nb", Command{
			AllowedTools: []string{"Bash(git add:*)", "Bash(git status:*)", "Read"}, Body: "b"}},
		{"allowed-tools as a block list", "---\nallowed-tools:\n  - Read\n  - \"Bash(npm run test:*)\"\n- Grep, Glob\n---\nb", Command{
			AllowedTools: []string{"Read", "Bash(npm run test:*)", "Grep", "Glob"}, Body: "b"}},
		{"allowed-tools as a flow list", "---\nallowed-tools: [Read, 'Bash(git diff:*)', Edit(src/**)]\n---\nb", Command{
			AllowedTools: []string{"Read", "Bash(git diff:*)", "Edit(src/**)"}, Body: "b"}},
		{"a literal block", "---\ndescription: |\n  line one\n  line two\n---\nb", Command{Description: "line one\nline two", Body: "b"}},
		{"a folded block", "---\ndescription: >-\n  one\n  two\n\n  three\n---\nb", Command{Description: "one two\nthree", Body: "b"}},
		{"plain text on the next lines", "---\ndescription:\n  a long\n  description\n---\nb", Command{Description: "a long description", Body: "b"}},
		{"a plain value continued", "---\ndescription: a long\n  description\n---\nb", Command{Description: "a long description", Body: "b"}},
		{"CRLF line ends and a byte order mark", "\ufeff---\r\ndescription: Windows\r\n---\r\nbody\r\n", Command{Description: "Windows", Body: "body\r\n"}},
		{"unknown keys are kept, their values skipped", "---\nname: other\ndisable-model-invocation: true\nhooks:\n  PreToolUse:\n    - matcher: Bash\ndescription: d\n---\nb", Command{
			Description: "d", UnknownKeys: []string{"name", "disable-model-invocation", "hooks"}, Body: "b",
			Warnings: []string{
				`front matter key "name" is not read by sema and has no effect`,
				`front matter key "disable-model-invocation" is not read by sema and has no effect`,
				`front matter key "hooks" is not read by sema and has no effect`,
			}}},
		{"a shell line is text, with a warning", "Status: !`git status`\n", Command{Body: "Status: !`git status`\n",
			Warnings: []string{"the body has a !`…` shell line, which Claude Code runs; sema sends it to the model as text"}}},
		{"an empty allowed-tools", "---\nallowed-tools:\n---\nb", Command{Body: "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse("x", "/c/x.md", []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Name, tt.want.Path = "x", "/c/x.md"
			if d := cmp.Diff(&tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func TestParseRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cmd, file, inMsg string
	}{
		{"unterminated front matter", "x", "---\ndescription: d\nbody", "never closes"},
		{"only an opening line", "x", "---", "never closes"},
		{"not UTF-8", "x", "---\ndescription: \xff\n---\nb", "UTF-8"},
		{"empty name", "", "body", "empty name"},
		{"empty name part", "a::b", "body", "empty part"},
		{"a blank in the name", "a b", "body", "blank"},
		{"duplicate key", "x", "---\nmodel: a\nmodel: b\n---\nb", `"model" twice`},
		{"not key: value", "x", "---\njust text\n---\nb", "not \"key: value\""},
		{"no blank after the colon", "x", "---\ndescription:x\n---\nb", "not \"key: value\""},
		{"indented first line", "x", "---\n  description: d\n---\nb", "indented line"},
		{"list item outside a key", "x", "---\n- Read\n---\nb", "outside any key"},
		{"a list as description", "x", "---\ndescription:\n  - a\n---\nb", "one line of text"},
		{"list and text mixed", "x", "---\nallowed-tools:\n  - Read\n  Grep\n---\nb", "mixes"},
		{"unclosed quote", "x", "---\ndescription: \"open\n---\nb", "not closed"},
		{"text after a quote", "x", "---\ndescription: \"a\" b\n---\nb", "after the closing quote"},
		{"unclosed flow list", "x", "---\nallowed-tools: [Read,\n  Grep]\n---\nb", "not closed on its line"},
		{"a rule sema refuses", "x", "---\nallowed-tools: Edit(src/**\n---\nb", "allowed-tools rule"},
		{"a model with a blank", "x", "---\nmodel: claude sonnet\n---\nb", "blank"},
		{"too large", "x", strings.Repeat("a", MaxFileBytes+1), "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.cmd, "/c/x.md", []byte(tt.file))
			if !sema.IsCode(err, CodeInvalid) || !strings.Contains(err.Error(), tt.inMsg) || !strings.Contains(err.Error(), "/c/x.md") {
				t.Fatalf("err %v; want %s naming the file and saying %q", err, CodeInvalid, tt.inMsg)
			}
		})
	}
}
