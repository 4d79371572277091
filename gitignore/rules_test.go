package gitignore

import "testing"

func TestGitignoreRules(t *testing.T) {
	t.Parallel()
	type probe struct {
		rel  string
		dir  bool
		want bool
	}
	cases := []struct {
		name   string
		lines  string
		probes []probe
	}{
		{"base name glob at any depth", "*.log", []probe{
			{rel: "a.log", want: true}, {rel: "deep/er/a.log", want: true}, {rel: "a.log.txt"}, {rel: "log"},
		}},
		{"plain name matches files and directories anywhere", "node_modules", []probe{
			{rel: "node_modules", dir: true, want: true}, {rel: "pkg/node_modules", dir: true, want: true}, {rel: "node_modules", want: true}, {rel: "node_modules2", dir: true},
		}},
		{"trailing slash matches directories only", "build/", []probe{
			{rel: "build", dir: true, want: true}, {rel: "src/build", dir: true, want: true}, {rel: "build"},
		}},
		{"leading slash anchors", "/build", []probe{
			{rel: "build", dir: true, want: true}, {rel: "build", want: true}, {rel: "src/build", dir: true},
		}},
		{"middle slash anchors", "doc/frotz", []probe{
			{rel: "doc/frotz", want: true}, {rel: "a/doc/frotz"},
		}},
		{"star does not cross slash", "foo/*", []probe{
			{rel: "foo/bar", want: true}, {rel: "foo/bar", dir: true, want: true}, {rel: "foo/bar/baz"}, {rel: "foo", dir: true},
		}},
		{"leading double star", "**/foo", []probe{
			{rel: "foo", want: true}, {rel: "a/b/foo", dir: true, want: true}, {rel: "foobar"},
		}},
		{"middle double star", "a/**/b", []probe{
			{rel: "a/b", want: true}, {rel: "a/x/b", want: true}, {rel: "a/x/y/b", want: true}, {rel: "x/a/b"}, {rel: "a/xb"},
		}},
		{"trailing double star", "abc/**", []probe{
			{rel: "abc/x", want: true}, {rel: "abc/x/y", want: true}, {rel: "abc", dir: true},
		}},
		{"other double stars are single stars", "a**b", []probe{
			{rel: "axxb", want: true}, {rel: "sub/ab", want: true},
		}},
		{"negation re-includes", "*.log\n!keep.log", []probe{
			{rel: "keep.log"}, {rel: "other.log", want: true}, {rel: "sub/keep.log"},
		}},
		{"last match wins", "!keep.log\n*.log", []probe{
			{rel: "keep.log", want: true},
		}},
		{"comments, blank lines and escapes", "# comment\n\n\\#hash\n\\!bang", []probe{
			{rel: "# comment"}, {rel: "#hash", want: true}, {rel: "!bang", want: true}, {rel: "comment"},
		}},
		{"trailing spaces dropped unless escaped", "trail   \nsp\\ ", []probe{
			{rel: "trail", want: true}, {rel: "trail   "}, {rel: "sp ", want: true}, {rel: "sp"},
		}},
		{"bracket expressions", "[abc].txt\n[!x-z]?.md\n[[:digit:]]*.csv", []probe{
			{rel: "a.txt", want: true}, {rel: "d.txt"}, {rel: "a1.md", want: true}, {rel: "y1.md"}, {rel: "7x.csv", want: true}, {rel: "x7.csv"},
		}},
		{"question mark is one non-slash character", "a?b", []probe{
			{rel: "axb", want: true}, {rel: "ab"}, {rel: "axxb"},
		}},
		{"CRLF line endings", "*.tmp\r\nbin/\r\n", []probe{
			{rel: "x.tmp", want: true}, {rel: "bin", dir: true, want: true},
		}},
		{"dots and plus are literal", "a.b+c", []probe{
			{rel: "a.b+c", want: true}, {rel: "axb+c"}, {rel: "a.bbc"},
		}},
		{"escaped star is literal", `\*.md`, []probe{
			{rel: "*.md", want: true}, {rel: "a.md"},
		}},
		{"a line of spaces is blank", "   \n \n*.x", []probe{
			{rel: " "}, {rel: "a.x", want: true},
		}},
		{"a lone slash matches nothing", "/\n!\n", []probe{
			{rel: "a"}, {rel: "a", dir: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := (*ignoreStack)(nil).push(parseIgnore("/r", []byte(c.lines)))
			for _, p := range c.probes {
				if got := st.ignored("/r/"+p.rel, p.dir); got != p.want {
					t.Errorf("patterns %q: ignored(%q, dir=%v) = %v, want %v", c.lines, p.rel, p.dir, got, p.want)
				}
			}
		})
	}
}

func TestGitignoreDeeperFileWins(t *testing.T) {
	t.Parallel()
	top := parseIgnore("/r", []byte("*.txt\n!important.txt"))
	sub := parseIgnore("/r/sub", []byte("!keep.txt\nimportant.txt\n/local.md"))
	st := (*ignoreStack)(nil).push(top).push(sub)
	cases := []struct {
		path string
		want bool
	}{
		{"/r/a.txt", true},
		{"/r/important.txt", false},
		{"/r/sub/keep.txt", false},     // the deeper negation wins
		{"/r/sub/other.txt", true},     // the top file still applies below
		{"/r/sub/important.txt", true}, // the deeper exclusion wins over the top negation
		{"/r/sub/local.md", true},      // anchored to sub/
		{"/r/sub/x/local.md", false},   // ... and only there
		{"/r/other/keep.txt", true},    // sub's negation does not reach siblings
	}
	for _, c := range cases {
		if got := st.ignored(c.path, false); got != c.want {
			t.Errorf("ignored(%s) = %v, want %v", c.path, got, c.want)
		}
	}
}

// FuzzGitignoreRule compiles arbitrary lines: none may panic, and a compiled rule is
// consistent with itself on the probe paths (a rule without "!" never re-includes).
func FuzzGitignoreRule(f *testing.F) {
	for _, s := range []string{"*.log", "build/", "/a/**/b", "!keep", `\#x`, "[!a-z]?", "[[:alpha:]]", "a\\", "[", "**", "a/**", "[]]"} {
		f.Add(s, "a/b.log")
	}
	f.Fuzz(func(t *testing.T, line, rel string) {
		r, ok := compileIgnoreRule(line)
		if !ok {
			return
		}
		st := (*ignoreStack)(nil).push(&ignoreFile{base: "/r", rules: []ignoreRule{r}})
		for _, dir := range []bool{false, true} {
			if st.ignored("/r/"+rel, dir) && r.negate {
				t.Fatalf("the negated rule %q ignored %q", line, rel)
			}
		}
	})
}
