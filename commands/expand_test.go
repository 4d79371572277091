package commands

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
)

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b\tc\n", []string{"a", "b", "c"}},
		{`123 "high priority" alice`, []string{"123", "high priority", "alice"}},
		{`'it''s' "say \"hi\"" back\ slash`, []string{"its", `say "hi"`, "back slash"}},
		{`a"b c"d`, []string{"ab cd"}},
		{`"" ''`, []string{"", ""}},
		{`"\n stays" '\n stays'`, []string{`\n stays`, `\n stays`}},
		{`'$1 and $ARGUMENTS'`, []string{"$1 and $ARGUMENTS"}},
		{`trailing\`, []string{`trailing\`}},
		{"héllo wörld", []string{"héllo", "wörld"}},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.in)
		if err != nil {
			t.Errorf("SplitArgs(%q): %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("SplitArgs(%q) (-want +got)\n%s", tt.in, d)
		}
	}
	for _, in := range []string{`"open`, `a 'open`, `"escaped \"`} {
		if _, err := SplitArgs(in); !sema.IsCode(err, CodeInvalid) {
			t.Errorf("SplitArgs(%q) = %v; want %s", in, err, CodeInvalid)
		}
	}
}

func TestJoinArgsRoundTrips(t *testing.T) {
	t.Parallel()
	for _, words := range [][]string{
		{"a"}, {"a b", "c"}, {"it's", `"q"`, `back\slash`, ""}, {"$1", "x\ny"},
	} {
		got, err := SplitArgs(JoinArgs(words))
		if err != nil || !cmp.Equal(got, words) {
			t.Errorf("SplitArgs(JoinArgs(%q)) = %q, %v", words, got, err)
		}
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, args, want string
	}{
		{"the whole argument string, as typed", "Fix issue $ARGUMENTS now.", ` 123 "high priority" `, `Fix issue 123 "high priority" now.`},
		{"positional arguments, quotes respected", "Review #$1 with priority $2, assign $3.", `123 "high priority" alice`, "Review #123 with priority high priority, assign alice.\n\nARGUMENTS: 123 \"high priority\" alice"},
		{"a missing positional stays as written", "Costs $5; first $1.", "a", "Costs $5; first a.\n\nARGUMENTS: a"},
		{"indexed from 0", "$ARGUMENTS[0] then $ARGUMENTS[1], not $ARGUMENTS[2]", "x 'y z'", "x then y z, not $ARGUMENTS[2]"},
		{"$0 and $10 are not placeholders of their own", "$0 $10", "a", "$0 a0\n\nARGUMENTS: a"},
		{"one pass: an argument is not expanded again", "got $1 and $ARGUMENTS", `'$2' b`, "got $2 and '$2' b"},
		{"no $ARGUMENTS: the arguments are appended", "Review the code.\n", "src/main.go", "Review the code.\n\nARGUMENTS: src/main.go"},
		{"no $ARGUMENTS but $1: appended too, as Claude Code does", "Look at $1.", "a b", "Look at a.\n\nARGUMENTS: a b"},
		{"no arguments: nothing appended", "Review the code.", "", "Review the code."},
		{"no arguments: $ARGUMENTS is empty", "Topic: $ARGUMENTS.", "", "Topic: ."},
		{"an empty body with arguments", "", "do this", "ARGUMENTS: do this"},
		{"a lone dollar", "Pay $ and $$ and $ARG", "", "Pay $ and $$ and $ARG"},
		{"a shell line stays text", "Diff: !`git diff $1`\n@src/a.go", "HEAD", "Diff: !`git diff HEAD`\n@src/a.go\n\nARGUMENTS: HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Command{Name: "x", Path: "/c/x.md", Body: tt.body}
			got, err := c.Expand(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Expand(%q)\n got %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestExpandRefusals(t *testing.T) {
	t.Parallel()
	c := &Command{Name: "fix", Path: "/c/fix.md", Body: "Fix $1"}
	_, err := c.Expand(`"unterminated`)
	if !sema.IsCode(err, CodeInvalid) || !strings.Contains(err.Error(), "/fix") || !strings.Contains(err.Error(), "not closed") {
		t.Errorf("unterminated quote: %v", err)
	}
	empty := &Command{Name: "e", Path: "/c/e.md", Body: "\n  \n"}
	if _, err := empty.Expand(""); !sema.IsCode(err, CodeInvalid) || !strings.Contains(err.Error(), "/c/e.md") {
		t.Errorf("empty expansion: %v", err)
	}
}

func TestSplitAndShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prompt, name, args string
		ok, shaped         bool
	}{
		{"/review", "review", "", true, true},
		{"/frontend:component  Button  ", "frontend:component", "Button", true, true},
		{"/fix\n123", "fix", "123", true, true},
		{"/tmp/foo is broken", "tmp/foo", "is broken", true, false},
		{"/Users/me", "Users/me", "", true, false},
		{"/Review", "Review", "", true, false},
		{"/", "", "", false, false},
		{"/ x", "", "", false, false},
		{" /review", "", "", false, false},
		{"review", "", "", false, false},
	}
	for _, tt := range tests {
		name, args, ok := Split(tt.prompt)
		if name != tt.name || args != tt.args || ok != tt.ok || ok && CommandShaped(name) != tt.shaped {
			t.Errorf("Split(%q) = %q, %q, %v (shaped %v); want %q, %q, %v (shaped %v)", tt.prompt, name, args, ok, CommandShaped(name), tt.name, tt.args, tt.ok, tt.shaped)
		}
	}
}

// FuzzParse: Parse never panics; a command it accepts expands deterministically, and an
// expansion either succeeds or refuses with CodeInvalid.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"Review $ARGUMENTS",
		"---\ndescription: d\nallowed-tools: [Read, Bash(git:*)]\n---\n$1 $2 $ARGUMENTS[0]",
		"---\ndescription: |\n  a\n  b\nallowed-tools:\n  - Read\n---\nbody",
		"---\ndescription: \"unterminated\n---\n",
		"---\r\nmodel: 'x'\r\n---\r\n$9$ARGUMENTS[999999]",
		"---\nhooks:\n  a:\n    - b\n---\n!`ls`",
		"---",
		"\ufeff",
	} {
		f.Add(s, `a "b c" d`)
	}
	f.Fuzz(func(t *testing.T, file, args string) {
		c, err := Parse("fuzz", "/c/fuzz.md", []byte(file))
		if err != nil {
			if !sema.IsCode(err, CodeInvalid) {
				t.Fatalf("refusal without %s: %v", CodeInvalid, err)
			}
			return
		}
		first, err1 := c.Expand(args)
		second, err2 := c.Expand(args)
		if first != second || (err1 == nil) != (err2 == nil) {
			t.Fatalf("Expand is not deterministic: %q, %v / %q, %v", first, err1, second, err2)
		}
		if err1 != nil && !sema.IsCode(err1, CodeInvalid) {
			t.Fatalf("expansion refusal without %s: %v", CodeInvalid, err1)
		}
		if err1 == nil && strings.TrimSpace(first) == "" {
			t.Fatalf("an empty expansion was accepted")
		}
	})
}
