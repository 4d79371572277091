package subagent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

const testPath = "/w/.claude/agents/x.md"

// agentFile builds an agent file from front matter lines and a body.
func agentFile(body string, lines ...string) string {
	return "---\n" + strings.Join(lines, "\n") + "\n---\n" + body
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	base := Definition{Name: "x", Description: "Does x.", Source: testPath}
	with := func(f func(*Definition)) Definition {
		d := base
		f(&d)
		return d
	}
	for _, tc := range []struct {
		name string
		in   string
		want Definition
	}{
		{"minimal", agentFile("", "name: x", "description: Does x."), base},
		{"body trimmed", agentFile("\n\n  You review code.\n\nBe brief.\n\n", "name: x", "description: Does x."),
			with(func(d *Definition) { d.Prompt = "You review code.\n\nBe brief." })},
		{"body keeps later fences", agentFile("one\n---\ntwo", "name: x", "description: Does x."),
			with(func(d *Definition) { d.Prompt = "one\n---\ntwo" })},
		{"crlf and bom", "\uFEFF---\r\nname: x\r\ndescription: Does x.\r\n---\r\nHi.\r\n",
			with(func(d *Definition) { d.Prompt = "Hi." })},
		{"fence with trailing spaces", "---  \nname: x\ndescription: Does x.\n--- \nHi.",
			with(func(d *Definition) { d.Prompt = "Hi." })},
		{"single-quoted", agentFile("", "name: 'x'", "description: 'It''s x: a # not a comment'"),
			with(func(d *Definition) { d.Description = "It's x: a # not a comment" })},
		{"double-quoted escapes", agentFile("", `name: "x"`, `description: "Say \"hi\" \\ now\nthen caf\u00e9 \/ done" # c`),
			with(func(d *Definition) { d.Description = "Say \"hi\" \\ now\nthen café / done" })},
		{"bare with colon, hash and comment", agentFile("", "name: x # the name", "description: Use when: C# code"),
			with(func(d *Definition) { d.Description = "Use when: C# code" })},
		{"bare value continued", agentFile("", "name: x", "description: Use this", "  when reviewing", "", "  code."),
			with(func(d *Definition) { d.Description = "Use this when reviewing\ncode." })},
		{"value on the next line", agentFile("", "name:", "  x", "description:", `  "Does x."`), base},
		{"literal block", agentFile("", "name: x", "description: |", "  Line one", "    indented", "", "  Line three", "model: m"),
			with(func(d *Definition) { d.Description = "Line one\n  indented\n\nLine three"; d.Model = "m" })},
		{"literal block strip", agentFile("", "name: x", "description: |- # comment", "  Does x.", "  # kept"),
			with(func(d *Definition) { d.Description = "Does x.\n# kept" })},
		{"literal block indentation indicator", agentFile("", "name: x", "description: |2+", "    Does", "  x."),
			with(func(d *Definition) { d.Description = "Does\nx." })},
		{"folded block", agentFile("", "name: x", "description: >", "  Does x", "  when asked.", "", "  Then more."),
			with(func(d *Definition) { d.Description = "Does x when asked.\nThen more." })},
		{"folded block keeps more-indented lines", agentFile("", "name: x", "description: >-", "  Does:", "    - a", "    - b", "  end"),
			with(func(d *Definition) { d.Description = "Does:\n  - a\n  - b\nend" })},
		{"tools comma string", agentFile("", "name: x", "description: Does x.", "tools: Read, Grep,Glob"),
			with(func(d *Definition) { d.Tools = []string{"Read", "Grep", "Glob"} })},
		{"tools quoted string", agentFile("", "name: x", "description: Does x.", `tools: "Read, mcp__github__create_issue"`),
			with(func(d *Definition) { d.Tools = []string{"Read", "mcp__github__create_issue"} })},
		{"tools flow list", agentFile("", "name: x", "description: Does x.", "tools: [Read, 'Grep', \"Glob\",] # c"),
			with(func(d *Definition) { d.Tools = []string{"Read", "Grep", "Glob"} })},
		{"tools flow list over lines", agentFile("", "name: x", "description: Does x.", "tools: [Read,", "  Grep]"),
			with(func(d *Definition) { d.Tools = []string{"Read", "Grep"} })},
		{"tools block list", agentFile("", "name: x", "description: Does x.", "tools:", "  - Read", "  # a comment", "", "  - \"Grep\"", "  - Glob # c"),
			with(func(d *Definition) { d.Tools = []string{"Read", "Grep", "Glob"} })},
		{"tools block list at column 0", agentFile("", "name: x", "description: Does x.", "tools:", "- Read", "- bash_readonly"),
			with(func(d *Definition) { d.Tools = []string{"Read", "bash_readonly"} })},
		{"tools deduplicated", agentFile("", "name: x", "description: Does x.", "tools: Read, Grep, Read"),
			with(func(d *Definition) { d.Tools = []string{"Read", "Grep"} })},
		{"tools empty inherits", agentFile("", "name: x", "description: Does x.", "tools:"), base},
		{"tools empty quoted inherits", agentFile("", "name: x", "description: Does x.", `tools: ""`), base},
		{"tools null inherits", agentFile("", "name: x", "description: Does x.", "tools: ~"), base},
		{"disallowedTools", agentFile("", "name: x", "description: Does x.", "disallowedTools: [Write, Edit]"),
			with(func(d *Definition) { d.DisallowedTools = []string{"Write", "Edit"} })},
		{"disallowedTools empty list", agentFile("", "name: x", "description: Does x.", "disallowedTools: []"), base},
		{"model and mode", agentFile("", "name: x", "description: Does x.", "model: inherit", "permissionMode: plan"),
			with(func(d *Definition) { d.Model = "inherit"; d.PermissionMode = permission.ModePlan })},
		{"mode empty inherits", agentFile("", "name: x", "description: Does x.", `permissionMode: ""`), base},
		{"every mode", agentFile("", "name: x", "description: Does x.", "permissionMode: bypassPermissions"),
			with(func(d *Definition) { d.PermissionMode = permission.ModeBypassPermissions })},
		{"ignored keys", agentFile("",
			"# a comment", "name: x", "color: blue", "skills:", "  - a", "maxTurns: 5",
			"mcpServers:", "  github:", "    command: gh", "memory: project", "description: Does x."), base},
		{"name with dots and digits", agentFile("", "name: 9a.b_c-d", "description: Does x."),
			with(func(d *Definition) { d.Name = "9a.b_c-d" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(testPath, []byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if err := Validate(got); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	nd := []string{"name: x", "description: Does x."}
	plus := func(more ...string) string { return agentFile("", append(append([]string{}, nd...), more...)...) }
	for _, tc := range []struct {
		name string
		in   string
		line int    // the line the message names; 0 for none
		want string // a part of the message that names the problem
	}{
		{"not utf-8", "---\nname: x\xff\n---\n", 0, "not valid UTF-8"},
		{"no front matter", "You review code.\n", 0, "starts with front matter"},
		{"empty file", "", 0, "starts with front matter"},
		{"blank line before the fence", "\n---\nname: x\ndescription: d\n---\n", 0, "starts with front matter"},
		{"never closed", "---\nname: x\ndescription: d\n", 1, "never closed"},
		{"name missing", agentFile("", "description: Does x."), 0, "name is missing"},
		{"name empty", agentFile("", "name:", "description: Does x."), 2, "name is missing"},
		{"description missing", agentFile("", "name: x"), 0, "description is missing"},
		{"description blank", agentFile("", "name: x", "description: ''"), 3, "description is missing"},
		{"name with a space", agentFile("", "name: code reviewer", "description: d"), 2, `name "code reviewer" is not an agent name`},
		{"name too long", agentFile("", "name: "+strings.Repeat("a", 65), "description: d"), 2, `aaa..." is not an agent name`},
		{"name starting with a dash", agentFile("", "name: -x", "description: d"), 2, "is not an agent name"},
		{"mode unknown", plus("permissionMode: yolo"), 4,
			`permissionMode "yolo" is not a mode; use one of default, acceptEdits, plan, auto, dontAsk, bypassPermissions`},
		{"mode wrong case", plus("permissionMode: Plan"), 4, `permissionMode "Plan" is not a mode`},
		{"tools empty list", plus("tools: []"), 4, "tools: [] lists no tool"},
		{"tools with a pattern", plus("tools: Read, Bash(git:*)"), 4, `"Bash(git:*)" is not a tool name`},
		{"tools with a wildcard", plus("tools: [mcp__github__*]"), 4, `"mcp__github__*" is not a tool name`},
		{"tools with a space", plus("tools: Read Grep"), 4, `"Read Grep" is not a tool name`},
		{"tools empty between commas", plus("tools: Read,,Grep"), 4, "empty name between commas"},
		{"tools flow not closed", plus("tools: [Read, Grep"), 4, "not closed; end it with ]"},
		{"tools flow empty item", plus("tools: [Read, , Grep]"), 4, "has an empty item"},
		{"tools flow text after", plus("tools: [Read] Grep"), 4, "text follows the ]"},
		{"tools flow missing comma", plus(`tools: ["Read" "Grep"]`), 4, "expected , or ]"},
		{"tools block item empty", plus("tools:", "  - Read", "  -"), 6, "an empty item in tools"},
		{"tools block item misindented", plus("tools:", "  - Read", "    - Grep"), 6, "at the indentation of the first"},
		{"tools block item bad name", plus("tools:", "  - Read", "  - Bash(ls)"), 6, `"Bash(ls)" is not a tool name`},
		{"disallowedTools bad name", plus("disallowedTools: Write, *"), 4, `disallowedTools: "*" is not a tool name`},
		{"duplicate key", plus("name: y"), 4, "the key name appears twice (first on line 2)"},
		{"misspelled key", plus("permission_mode: plan"), 4, "the key permission_mode is not read; write permissionMode"},
		{"key in the wrong case", agentFile("", "Name: x", "description: d"), 2, "write name"},
		{"tool for tools", plus("tool: Read"), 4, "write tools"},
		{"hooks", plus("hooks:", "  PreToolUse: []"), 4, "hooks in an agent file are not supported"},
		{"isolation", plus("isolation: worktree"), 4, "isolation is not supported"},
		{"allowed-tools", plus("allowed-tools: Read"), 4, "list the tools the agent may use under tools"},
		{"tab indentation", plus("tools:", "\t- Read"), 5, "indented with a tab"},
		{"indented line first", agentFile("", "  name: x", "description: d"), 2, "no key comes before it"},
		{"no colon", plus("just some words"), 4, `expected "key: value", found "just some words"`},
		{"no space after colon", plus("model:sonnet"), 4, `expected "key: value"`},
		{"name is a flow list", agentFile("", "name: [x]", "description: d"), 2, "name takes one value, not a list"},
		{"name is a block list", agentFile("", "name:", "  - x", "description: d"), 3, "name takes one value, not a list"},
		{"list item after a value", agentFile("", "name: x", "- y", "description: d"), 3, "name takes one value, not a list"},
		{"description is a mapping", agentFile("", "name: x", "description:", "  when: always"), 4, "description takes one value, not a mapping"},
		{"description is a flow mapping", agentFile("", "name: x", "description: {a: b}"), 3, "not a mapping"},
		{"anchor", agentFile("", "name: &a x", "description: d"), 2, "anchors, aliases and tags are not read"},
		{"reserved indicator", agentFile("", "name: x", "description: @here"), 3, "which YAML reserves"},
		{"double quote not closed", agentFile("", "name: x", `description: "Does x.`), 3, "double-quoted value of description is not closed"},
		{"single quote not closed", agentFile("", "name: x", `description: 'Does x.`), 3, "single-quoted value of description is not closed"},
		{"lone backslash", agentFile("", "name: x", `description: "Does x.\`), 3, "lone backslash"},
		{"unknown escape", agentFile("", "name: x", `description: "C:\dir"`), 3, `the escape "\\d", which is not read`},
		{"short unicode escape", agentFile("", "name: x", `description: "\u12"`), 3, `\u escape`},
		{"surrogate unicode escape", agentFile("", "name: x", `description: "\ud800"`), 3, `\u escape`},
		{"text after the quote", agentFile("", "name: x", `description: "Does" x`), 3, "text follows the closing quote of description"},
		{"line after a quoted value", agentFile("", "name: x", `description: "Does x."`, "  more"), 4, "unexpected line after the quoted value"},
		{"block less indented", agentFile("", "name: x", "description: |", "    Does", "  x."), 5, "indented less than the text of description"},
		{"block header text", agentFile("", "name: x", "description: | Does x."), 3, "only a chomping indicator"},
		{"model with a space", plus("model: gpt 4"), 4, `model "gpt 4" is not a model name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Parse(testPath, []byte(tc.in))
			if err == nil {
				t.Fatalf("Parse accepted %q as %+v", tc.in, d)
			}
			if !sema.IsCode(err, CodeDefinitionInvalid) {
				t.Errorf("code = %q, want %s (%v)", sema.CodeOf(err), CodeDefinitionInvalid, err)
			}
			msg := sema.MessageOf(err)
			prefix := testPath + ": "
			if tc.line > 0 {
				prefix = fmt.Sprintf("%s:%d: ", testPath, tc.line)
			}
			if !strings.HasPrefix(msg, prefix) {
				t.Errorf("message %q does not start with %q", msg, prefix)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not contain %q", msg, tc.want)
			}
		})
	}
}

func TestParseModeCause(t *testing.T) {
	t.Parallel()
	_, err := Parse(testPath, []byte(agentFile("", "name: x", "description: d", "permissionMode: yolo")))
	if !sema.IsCode(err, permission.CodeModeInvalid) || sema.CodeOf(err) != CodeDefinitionInvalid {
		t.Errorf("err = %v; want %s wrapping %s", err, CodeDefinitionInvalid, permission.CodeModeInvalid)
	}
}

func TestParseUnnamedFile(t *testing.T) {
	t.Parallel()
	_, err := Parse("", []byte("no front matter"))
	if msg := sema.MessageOf(err); !strings.HasPrefix(msg, "agent file: ") {
		t.Errorf("message %q does not name the file", msg)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		agentFile("Prompt.", "name: x", "description: Does x."),
		agentFile("", "name: 'x'", `description: "a\"b\\c\u00e9"`, "tools: [Read, 'Grep',]", "permissionMode: plan"),
		agentFile("", "name: x", "description: >-", "  a", "", "    b", "tools:", "- Read", "- Grep"),
		agentFile("", "name: x", "description: |2", "   a", "  b", "disallowedTools: Write, Edit", "model: m"),
		agentFile("", "name:", "  x", "description:", "  a", "  b", "color: red", "hooks: {}"),
		"\uFEFF---\r\nname: x\r\ndescription: d\r\n---\r\n",
		"---\nname: x\n---",
		"---\n\tname: x\n---\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, err := Parse(testPath, []byte(in))
		if err != nil {
			if !sema.IsCode(err, CodeDefinitionInvalid) {
				t.Fatalf("refusal %v lacks code %s", err, CodeDefinitionInvalid)
			}
			if !strings.HasPrefix(sema.MessageOf(err), testPath+":") {
				t.Fatalf("refusal %q does not name the file", sema.MessageOf(err))
			}
			return
		}
		if err := Validate(d); err != nil {
			t.Fatalf("Parse returned %+v, which Validate refuses: %v", d, err)
		}
		if d.Source != testPath {
			t.Fatalf("Source = %q", d.Source)
		}
	})
}
