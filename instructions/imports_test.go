package instructions

import (
	"slices"
	"strings"
	"testing"
)

func TestImports(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"relative after a space", "Read @docs/style.md first.", []string{"docs/style.md"}},
		{"at the start of the text", "@AGENTS.md", []string{"AGENTS.md"}},
		{"at the start of a line", "rules:\n@rules/go.md\n@rules/sql.md", []string{"rules/go.md", "rules/sql.md"}},
		{"after a tab", "x\t@a.md", []string{"a.md"}},
		{"home, parent, absolute and dot", "@~/notes.md @../shared.md @/etc/team.md @./here.md", []string{"~/notes.md", "../shared.md", "/etc/team.md", "./here.md"}},
		{"each path once", "@a.md and again @a.md", []string{"a.md"}},
		{"an e-mail address is not an import", "mail team@example.com", nil},
		{"a bare at sign", "a @ b", nil},
		{"a double at sign", "@@a.md", nil},
		{"a brace", "@{a}", nil},
		{"a lone slash or tilde", "@/ @~", nil},
		{"an escaped at sign", `\@a.md`, nil},
		{"an escaped space", `@my\ notes.md`, []string{"my notes.md"}},
		{"a fragment is dropped", "@guide.md#testing", []string{"guide.md"}},
		{"sentence marks are dropped", "see @a.md, @b.md; (@c.md) or @d.md).", []string{"a.md", "b.md", "d.md"}},
		{"a path of dots only is nothing", "wait @... and @.", nil},
		{"a code span", "use `@a.md` literally, but @b.md", []string{"b.md"}},
		{"a double code span holding a backquote", "``x ` @a.md`` then @b.md", []string{"b.md"}},
		{"an unclosed backquote is text", "a ` @a.md", []string{"a.md"}},
		{"a code span ends the path", "@a.md`x`", []string{"a.md"}},
		{"a code span across lines of a paragraph", "`one\n@a.md` @b.md", []string{"b.md"}},
		{"a fenced block", "```\n@a.md\n```\n@b.md", []string{"b.md"}},
		{"a tilde fence with an info string", "~~~markdown\n@a.md\n~~~\n@b.md", []string{"b.md"}},
		{"a fence closes only with a run as long", "````\n```\n@a.md\n````\n@b.md", []string{"b.md"}},
		{"an unclosed fence runs to the end", "```go\n@a.md\n\n@b.md", nil},
		{"an indented fence opener", "   ```\n@a.md\n   ```\n@b.md", []string{"b.md"}},
		{"a backquote run with backquotes after it is no fence", "``` a ` b\n@a.md", []string{"a.md"}},
		{"an indented block after a blank line", "text\n\n    @a.md\n\t@b.md\n\n@c.md", []string{"c.md"}},
		{"an indented line continuing a paragraph is prose", "text\n    @a.md", []string{"a.md"}},
		{"an indented line inside a list is prose", "- item\n\n    @a.md\n\n1. two\n\n    @b.md", []string{"a.md", "b.md"}},
		{"a list ends at a paragraph at the margin", "- item\n\npara\n\n    @a.md", nil},
		{"CRLF line ends", "```\r\n@a.md\r\n```\r\n@b.md\r\n", []string{"b.md"}},
		{"a non-ASCII space before", "x\u00a0@a.md", []string{"a.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Imports(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Imports(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// FuzzImports holds the parser to what its callers rely on: it never panics, every path
// it returns is one it would return again from its own cleaning (no white space, no
// backquote, no fragment), each path comes from the text, and nothing after an
// unclosed fence is an import.
func FuzzImports(f *testing.F) {
	for _, s := range []string{
		"see @docs/a.md.", "`@x` @y", "```\n@a\n```\n@b", "- i\n\n    @a\n", `@a\ b`, "@~/x#y", "\t@/abs",
		"``x ` @a``", "~~~\n@a\n~~~", "a@b @@c @{d}", "@", "`", "\\", "@\\", "@a\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Imports(text)
		unescaped := strings.ReplaceAll(text, `\ `, " ")
		seen := map[string]bool{}
		for _, p := range got {
			if seen[p] {
				t.Fatalf("Imports(%q) returns %q twice", text, p)
			}
			seen[p] = true
			if again, ok := importPath(p); !ok || again != p {
				t.Fatalf("Imports(%q) returns %q, which cleans to %q (ok=%v)", text, p, again, ok)
			}
			if strings.ContainsAny(p, "`\n\r\t#") || p == "" {
				t.Fatalf("Imports(%q) returns the malformed path %q", text, p)
			}
			if !strings.Contains(unescaped, p) {
				t.Fatalf("Imports(%q) returns %q, which is not in the text", text, p)
			}
		}
		if !strings.Contains(text, "~~~") {
			if fenced := Imports("~~~\n" + text); len(fenced) > 0 {
				t.Fatalf("Imports of %q inside an unclosed fence returns %q", text, fenced)
			}
		}
	})
}
