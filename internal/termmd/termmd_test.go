package termmd

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

var styles = []struct {
	name  string
	style Style
}{{"dark", Dark}, {"light", Light}, {"notty", NoTTY}}

// Each construct reads the same in every style, is styled where there is colour
// (styled: some escape is written), and NoTTY writes no escape at all.
func TestConstructs(t *testing.T) {
	rule := strings.Repeat("─", 60)
	for _, tc := range []struct {
		name, src, want string
		styled          bool
	}{
		{"paragraph", "one\ntwo", "one two", false},
		{"paragraphs", "one\n\n\n\ntwo", "one\n\ntwo", false},
		{"blank lines around", "\n\n  \n# a\n\n\npara\n\n\n", "# a\n\npara", true},
		{"hard break", "one  \ntwo\\\nthree", "one\ntwo\nthree", false},
		{"h1", "# Title", "# Title", true},
		{"h2", "## Part", "## Part", true},
		{"h3", "### Sub", "### Sub", true},
		{"h6", "###### Small", "###### Small", true},
		{"setext", "Title\n=====\n\nPart\n----", "# Title\n\n## Part", true},
		{"emphasis", "*a*, _b_", "a, b", true},
		{"strong", "**a** __b__", "a b", true},
		{"strikethrough", "~~gone~~ here", "gone here", true},
		{"inline code", "use `x := 1` here", "use x := 1 here", true},
		{"fenced code", "```\nline one\n\n  line two\n```", "  line one\n\n    line two", false},
		{"indented code", "text\n\n    code line\n    next", "text\n\n  code line\n  next", false},
		{"code tabs", "```\n\tx\ta\n```", "      x   a", false},
		{"quote", "> a\n>\n> b", "│ a\n│\n│ b", true},
		{"nested quote", "> a\n>> b", "│ a\n│\n│ │ b", true},
		{"unordered", "- a\n- b\n* c", "• a\n• b\n\n• c", true},
		{"ordered", "3. a\n4. b", "3. a\n4. b", true},
		{"ordered widths", "9. a\n10. b", " 9. a\n10. b", true},
		{"ordered paren", "1) a\n2) b", "1) a\n2) b", true},
		{"loose", "- a\n\n- b", "• a\n\n• b", true},
		{"task list", "- [x] done\n- [ ] todo", "[x] done\n[ ] todo", true},
		{"ordered task", "1. [x] done", "1. [x] done", true},
		{"link", "[text](https://x.example/a)", "text (https://x.example/a)", true},
		{"link to itself", "[https://x.example](https://x.example)", "https://x.example", true},
		{"autolink", "<https://x.example/a>", "https://x.example/a", true},
		{"bare url", "see https://x.example/a now", "see https://x.example/a now", true},
		{"www", "see www.example.com now", "see www.example.com now", true},
		{"email", "<a@b.example>", "a@b.example", true},
		{"image", "![a cat](cat.png)", "Image: a cat (cat.png)", true},
		{"image no alt", "![](cat.png)", "Image: cat.png", true},
		{"rule", "a\n\n---\n\nb", "a\n\n" + rule + "\n\nb", true},
		{"table", "| a | bb |\n|---|---:|\n| ccc | 1 |", "a   │ bb\n────┼───\nccc │  1", true},
		{"table centre", "| h | x |\n|:-:|---|\n| y | z |", "h │ x\n──┼──\ny │ z", true},
		{"ragged table", "| a | b |\n|---|---|\n| 1 |\n| 2 | 3 | 4 |", "a │ b\n──┼──\n1\n2 │ 3", true},
		{"inline html", "a <b>x</b> c", "a <b>x</b> c", false},
		{"html block", "<div>\nhi\n</div>", "<div>\nhi\n</div>", false},
		{"references", "&amp; &lt; &#65; &#x42; \\*x\\*", "& < A B *x*", false},
		{"url before a full stop", "see https://x.example/a.", "see https://x.example/a.", true},
		{"url in parentheses", "(see https://x.example/a)", "(see https://x.example/a)", true},
		{"url with its parentheses", "https://x.example/F_(b)", "https://x.example/F_(b)", true},
		{"url in a link's text", "[see https://x.example](https://y.example)", "see https://x.example (https://y.example)", true},
		{"no url mid-word", "ahttps://x.example", "ahttps://x.example", false},
		{"www needs a dot", "www.", "www.", false},
		{"table after text", "intro\n| a | b |\n|---|---|\n| 1 | 2 |", "intro\n\na │ b\n──┼──\n1 │ 2", true},
		{"header and delimiter differ", "| a | b |\n|---|\n| 1 | 2 |", "| a | b | |---| | 1 | 2 |", false},
		{"escaped pipe", "| a | b |\n|---|---|\n| x \\| y | 2 |", "a     │ b\n──────┼──\nx | y │ 2", true},
		{"three tildes", "a ~~~b~~~ c", "a ~~~b~~~ c", false},
		{"box needs a space", "- [x]done", "• [x]done", true},
		{"reference link", "[t][r]\n\n[r]: https://x.example", "t (https://x.example)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range styles {
				got := Render(tc.src, 60, s.style)
				if vis := ansi.Strip(got); vis != tc.want {
					t.Errorf("%s: reads\n%q\nwant\n%q", s.name, vis, tc.want)
				}
				hasEsc := strings.Contains(got, "\x1b")
				switch {
				case s.style == NoTTY && hasEsc:
					t.Errorf("notty writes an escape: %q", got)
				case s.style != NoTTY && hasEsc != tc.styled:
					t.Errorf("%s: styled %v, want %v: %q", s.name, hasEsc, tc.styled, got)
				}
			}
		})
	}
}

// The two colour styles differ: each is chosen for its background.
func TestDarkAndLightDiffer(t *testing.T) {
	const src = "# Title\n\n`code` and [a link](https://x.example)"
	if Render(src, 60, Dark) == Render(src, 60, Light) {
		t.Error("dark and light render alike")
	}
}

func TestNestedLists(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
		width           int
	}{
		{"three levels", "- a\n  - b\n    - c\n- d", "• a\n  ◦ b\n    • c\n• d", 60},
		{"ordered in unordered", "- a\n  1. b\n  2. c", "• a\n  1. b\n  2. c", 60},
		{"continuation paragraph", "1. first\n\n   more text\n2. second", "1. first\n\n   more text\n\n2. second", 60},
		{"wrapped item", "- one two three four five six", "• one two three\n  four five six", 16},
		{"wrapped nested", "- a\n  - one two three four five", "• a\n  ◦ one two\n    three four\n    five", 16},
		{"code in item", "- a\n\n  ```\n  x\n  ```", "• a\n\n    x", 60},
		{"quote in item", "- a\n\n  > q", "• a\n\n  │ q", 60},
		{"list in quote", "> - a\n>   - b", "│ • a\n│   ◦ b", 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ansi.Strip(Render(tc.src, tc.width, Dark)); got != tc.want {
				t.Errorf("reads\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// No visible line is wider than the width, but a code block's: those are kept whole.
func TestWrapWidth(t *testing.T) {
	doc := answer(false)
	for width := 20; width <= 120; width++ {
		for _, s := range styles {
			out := Render(doc, width, s.style)
			for i, line := range strings.Split(out, "\n") {
				if w := ansi.StringWidth(line); w > width {
					t.Fatalf("%s at %d: line %d is %d wide: %q", s.name, width, i, w, ansi.Strip(line))
				}
			}
			checkShape(t, out)
		}
	}
	long := strings.Repeat("x", 50)
	if got := ansi.Strip(Render("```\n"+long+"\n```", 20, Dark)); got != "  "+long {
		t.Errorf("a long code line is %q", got)
	}
	if got := ansi.Strip(Render(long, 20, Dark)); got != long[:20]+"\n"+long[20:40]+"\n"+long[40:] {
		t.Errorf("a long word is cut as %q", got)
	}
	if got := ansi.Strip(Render("漢字漢字漢字", 5, Dark)); got != "漢字\n漢字\n漢字" {
		t.Errorf("wide characters are cut as %q", got)
	}
}

// A table wider than the width becomes one block per row.
func TestWideTable(t *testing.T) {
	src := "| name | description |\n|---|---|\n| a | " + strings.Repeat("word ", 12) + "|\n| b | short |"
	got := ansi.Strip(Render(src, 30, NoTTY))
	want := "name: a\ndescription: word word word\n  word word word word word\n  word word word word\n\nname: b\ndescription: short"
	if got != want {
		t.Errorf("reads\n%s\nwant\n%s", got, want)
	}
}

// checkShape fails for a blank line at either end, two blank lines running, a line
// ending in a space, or a tab.
func checkShape(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(ansi.Strip(out), "\n")
	if out == "" {
		return
	}
	if lines[0] == "" || lines[len(lines)-1] == "" {
		t.Fatalf("a blank line at an end: %q", out)
	}
	for i, l := range lines {
		if strings.HasSuffix(l, " ") || strings.Contains(l, "\t") {
			t.Fatalf("line %d ends in a space or holds a tab: %q", i, l)
		}
		if i > 0 && l == "" && lines[i-1] == "" {
			t.Fatalf("two blank lines at %d: %q", i, out)
		}
	}
}

func TestHighlight(t *testing.T) {
	p := palettes[Dark]
	kw, str, com, num := p[rKeyword], p[rString], p[rComment], p[rNumber]
	for _, tc := range []struct {
		lang, code string
		want       [][2]string // SGR parameters and the text they colour
	}{
		{"go", "func f() int {\n\ts := \"hi\" // note\n\treturn 42\n}", [][2]string{{kw, "func"}, {str, `"hi"`}, {com, "// note"}, {num, "42"}, {kw, "return"}}},
		{"go", "x := `raw\nstring` /* block\ncomment */", [][2]string{{str, "`raw"}, {str, "string`"}, {com, "/* block"}, {com, "comment */"}}},
		{"python", "def f():\n    s = 'hi'  # note\n    return None", [][2]string{{kw, "def"}, {str, "'hi'"}, {com, "# note"}, {kw, "None"}}},
		{"py", "x = \"\"\"doc\nstring\"\"\"", [][2]string{{str, `"""doc`}, {str, `string"""`}}},
		{"js", "const s = \"hi\"; // note", [][2]string{{kw, "const"}, {str, `"hi"`}, {com, "// note"}}},
		{"typescript", "let n: number = 3 /* c */", [][2]string{{kw, "let"}, {num, "3"}, {com, "/* c */"}}},
		{"rust", "fn main() { let s = \"hi\"; // note\n}", [][2]string{{kw, "fn"}, {kw, "let"}, {str, `"hi"`}, {com, "// note"}}},
		{"bash", "if [ -n \"$x\" ]; then echo 'hi'; fi # note\necho a#b", [][2]string{{kw, "if"}, {kw, "then"}, {str, `"$x"`}, {str, "'hi'"}, {com, "# note"}}},
		{"sh", "echo don't", nil},
		{"c", "int main(void) { char *s = \"hi\"; /* note */ return 0; }", [][2]string{{kw, "int"}, {str, `"hi"`}, {com, "/* note */"}, {num, "0"}}},
		{"cpp", "auto x = 1; // note", [][2]string{{kw, "auto"}, {com, "// note"}}},
		{"java", "public class A { String s = \"hi\"; // note\n}", [][2]string{{kw, "public"}, {kw, "class"}, {str, `"hi"`}, {com, "// note"}}},
		{"json", "{\"a\": true, \"n\": 1.5}", [][2]string{{str, `"a"`}, {kw, "true"}, {num, "1.5"}}},
		{"yaml", "key: 'hi' # note\nok: true\nit's: plain", [][2]string{{p[rKey], "key"}, {str, "'hi'"}, {com, "# note"}, {kw, "true"}}},
		{"diff", "@@ -1 +1 @@\n-old\n+new\n context", [][2]string{{p[rHunk], "@@ -1 +1 @@"}, {p[rRemoved], "-old"}, {p[rAdded], "+new"}}},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			out := Render("```"+tc.lang+"\n"+tc.code+"\n```", 80, Dark)
			for _, w := range tc.want {
				if want := "\x1b[" + w[0] + "m" + w[1]; !strings.Contains(out, want) {
					t.Errorf("%q is not coloured %s: %q", w[1], w[0], out)
				}
			}
			if got, want := ansi.Strip(out), "  "+strings.ReplaceAll(strings.ReplaceAll(tc.code, "\t", "    "), "\n", "\n  "); got != want {
				t.Errorf("the code reads %q, want %q", got, want)
			}
		})
	}
	// In sh, a # inside a word and an apostrophe inside a word start nothing.
	out := Render("```sh\necho a#b don't\n```", 80, Dark)
	if strings.Contains(out, "\x1b[") {
		t.Errorf("sh coloured a word: %q", out)
	}
	// A language it does not know is plain, and so is a block with none.
	for _, src := range []string{"```cobol\nif \"x\" // y\n```", "```\nfunc \"x\" // y\n```"} {
		if out := Render(src, 80, Dark); strings.Contains(out, "\x1b") {
			t.Errorf("%q is coloured: %q", src, out)
		}
	}
}

var ourSGR = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// checkSafe fails when out holds an escape that is not one of the renderer's SGR
// sequences (any escape at all for NoTTY), a control character but a newline, or bytes
// that are not UTF-8.
func checkSafe(t *testing.T, out string, style Style) {
	t.Helper()
	if style == NoTTY && strings.Contains(out, "\x1b") {
		t.Fatalf("notty wrote an escape: %q", out)
	}
	rest := ourSGR.ReplaceAllString(out, "")
	if !utf8.ValidString(rest) {
		t.Fatalf("the output is not UTF-8: %q", out)
	}
	for _, c := range rest {
		if c < 0x20 && c != '\n' || c >= 0x7f && c <= 0x9f {
			t.Fatalf("the output holds control %#x: %q", c, out)
		}
	}
}

// No control character of the input reaches the output, in any construct; an escape is
// shown as ␛.
func TestControlsNeverPass(t *testing.T) {
	bad := "a\x1b[31mred\x07\x9b\xc2\x9b\x00\x7f\x08\rz&#27;&#x9b;&#0;"
	srcs := []string{
		bad,
		"# " + bad,
		"`" + bad + "`",
		"```go\n" + bad + "\n```",
		"```" + bad + "\nx\n```",
		"    " + bad,
		"[" + bad + "](http://x/" + bad + ")",
		"![" + bad + "](" + bad + ")",
		"<http://x/" + bad + ">",
		"http://x.example/" + bad,
		"| " + bad + " | b |\n|---|---|\n| " + bad + " | c |",
		"<div>" + bad + "\n" + bad + "</div>",
		"a <span title=\"" + bad + "\">x</span>",
		"> - [x] " + bad,
		"[r]\n\n[r]: " + bad,
	}
	for _, src := range srcs {
		for _, s := range styles {
			out := Render(src, 40, s.style)
			checkSafe(t, out, s.style)
		}
	}
	if out := Render("a\x1bb", 40, NoTTY); out != "a␛b" {
		t.Errorf("ESC reads %q", out)
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"# h\n\n- a\n  - b\n\n```go\nx := 1\n```", "| a | b |\n|--|--|\n| 1 | 2 |", "> q\n\n1. x\n2. [ ] y", "a\x1b[31m\tb\x9b", answer(true)} {
		f.Add(s, byte(40))
	}
	f.Fuzz(func(t *testing.T, src string, width byte) {
		for _, s := range styles {
			out := Render(src, int(width), s.style)
			checkSafe(t, out, s.style)
			if strings.Contains(out, "\t") {
				t.Fatalf("a tab: %q", out)
			}
		}
	})
}

func BenchmarkRender(b *testing.B) {
	doc := answer(true)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		Render(doc, 100, Dark)
	}
}

// answer is a realistic answer of about 8 KiB (with longCode): headings, paragraphs, lists, code, a
// table. With longCode, its code has lines longer than any width tested.
func answer(longCode bool) string {
	var b strings.Builder
	b.WriteString("# Why the build fails\n\nThe build fails because the **generated** file is stale: `go generate` was not run after the *schema* changed, so the types in `model_gen.go` no longer match what the handlers expect. See [the docs](https://example.com/docs/generate) or https://example.com/issues for more.\n\n")
	for i := range 8 {
		fmt.Fprintf(&b, "## Step %d: check the %s\n\n", i+1, []string{"schema", "generator", "handlers", "tests", "imports", "build tags", "module cache", "vendor tree"}[i])
		b.WriteString("Run the following, then read what it prints. A change that touches the schema must regenerate the code, or the compiler reports missing fields in places far from the cause.\n\n")
		b.WriteString("- Open the file and look for the field\n- Compare it with the schema:\n  - the name must match, including its case\n  - the type must be the same\n    1. strings stay strings\n    2. numbers may widen\n- [x] regenerate\n- [ ] run the tests again\n\n")
		if longCode {
			b.WriteString("```go\n// Load reads the schema from path and returns its types, in the order they appear in the file.\nfunc Load(path string) ([]Type, error) {\n\tdata, err := os.ReadFile(path) // the whole file; schemas are small\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"load %s: %w\", path, err)\n\t}\n\treturn parse(data, 42)\n}\n```\n\n")
		} else {
			b.WriteString("```go\nfunc Load() {\n\tx := 42\n}\n```\n\n")
		}
		b.WriteString("> Note: the generator is **not** run by `go build`; it is a separate step.\n\n")
		b.WriteString("| file | status | lines |\n|------|:------:|------:|\n| model_gen.go | stale | 1204 |\n| schema.json | changed | 88 |\n| handler.go | ok | 310 |\n\n")
		if longCode {
			b.WriteString("```sh\n# regenerate\ngo generate ./... && go test ./...\n```\n\n---\n\n")
		} else {
			b.WriteString("```sh\n# regenerate\ngo test ./...\n```\n\n---\n\n")
		}
	}
	b.WriteString("That should fix it. If it does not, send the ~~whole~~ first error the compiler prints.\n")
	return b.String()
}

// A bare URL ends before a sentence's punctuation and a parenthesis it did not open.
func TestBareURLEnds(t *testing.T) {
	link := palettes[Dark][rLink] + "m" // after the underline, and the italic of *…*
	for src, url := range map[string]string{
		"see https://x.example/a.":   "https://x.example/a",
		"(see https://x.example/a)":  "https://x.example/a",
		"https://x.example/F_(b)":    "https://x.example/F_(b)",
		"*www.example.com/a?b=c*, d": "www.example.com/a?b=c",
		"ftp://files.example, then":  "ftp://files.example",
	} {
		if out := Render(src, 80, Dark); !strings.Contains(out, link+url+"\x1b[m") {
			t.Errorf("%q: the link is not %q: %q", src, url, out)
		}
	}
}
