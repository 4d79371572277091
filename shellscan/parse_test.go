package shellscan

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sema-agent/sema"
)

func mustParse(t testing.TB, cmd string) *Script {
	t.Helper()
	s, err := Parse(cmd)
	if err != nil {
		t.Fatalf("Parse(%q): %v", cmd, err)
	}
	return s
}

// segView is the part of a Segment the structure tests compare.
type segView struct {
	Name    string
	Words   []string // Raw
	Joiner  string
	InSubst bool
	Bg      bool
	Assigns []string
	Redirs  []string // Op + " " + Target.Raw
}

func view(s *Script) []segView {
	var out []segView
	for _, seg := range s.Segments {
		v := segView{Name: seg.Name(), Joiner: seg.Joiner, InSubst: seg.InSubstitution, Bg: seg.Background, Assigns: seg.Assignments}
		for _, w := range seg.Words {
			v.Words = append(v.Words, w.Raw)
		}
		for _, r := range seg.Redirects {
			v.Redirs = append(v.Redirs, r.Op+" "+r.Target.Raw)
		}
		out = append(out, v)
	}
	return out
}

func TestParseSegments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		want []segView
	}{
		{"a && b || c; d | e |& f & g\nh", []segView{
			{Name: "a", Words: []string{"a"}},
			{Name: "b", Words: []string{"b"}, Joiner: "&&"},
			{Name: "c", Words: []string{"c"}, Joiner: "||"},
			{Name: "d", Words: []string{"d"}, Joiner: ";", Bg: true},
			{Name: "e", Words: []string{"e"}, Joiner: "|", Bg: true},
			{Name: "f", Words: []string{"f"}, Joiner: "|&", Bg: true},
			{Name: "g", Words: []string{"g"}, Joiner: "&"},
			{Name: "h", Words: []string{"h"}, Joiner: "newline"},
		}},
		{"echo $(rm x; ls) `id`", []segView{
			{Name: "echo", Words: []string{"echo", "$(rm x; ls)", "`id`"}},
			{Name: "rm", Words: []string{"rm", "x"}, InSubst: true},
			{Name: "ls", Words: []string{"ls"}, Joiner: ";", InSubst: true},
			{Name: "id", Words: []string{"id"}, InSubst: true},
		}},
		{`echo "a $(b) c" > "$(d)"`, []segView{
			{Name: "echo", Words: []string{"echo", `"a $(b) c"`}, Redirs: []string{`> "$(d)"`}},
			{Name: "b", Words: []string{"b"}, InSubst: true},
			{Name: "d", Words: []string{"d"}, InSubst: true},
		}},
		{"a; (b && c) | { d; }", []segView{
			{Name: "a", Words: []string{"a"}},
			{Name: "b", Words: []string{"b"}, Joiner: ";"},
			{Name: "c", Words: []string{"c"}, Joiner: "&&"},
			{Name: "d", Words: []string{"d"}, Joiner: "|"},
		}},
		{"if a; then b; elif c; then d; else e; fi; for i in $(f); do g; done; while h; do i; done", []segView{
			{Name: "a", Words: []string{"a"}},
			{Name: "b", Words: []string{"b"}},
			{Name: "c", Words: []string{"c"}},
			{Name: "d", Words: []string{"d"}},
			{Name: "e", Words: []string{"e"}},
			{Name: "f", Words: []string{"f"}, InSubst: true},
			{Name: "g", Words: []string{"g"}},
			{Name: "h", Words: []string{"h"}},
			{Name: "i", Words: []string{"i"}},
		}},
		{"case $x in a) b;; *) c;; esac; fn() { d; }", []segView{
			{Name: "b", Words: []string{"b"}},
			{Name: "c", Words: []string{"c"}},
			{Name: "d", Words: []string{"d"}},
		}},
		{"FOO=1 BAR=$(x) cmd arg 2>&1 >/dev/null", []segView{
			{Name: "cmd", Words: []string{"cmd", "arg"}, Assigns: []string{"FOO=1", "BAR=$(x)"}, Redirs: []string{"2>& 1", "> /dev/null"}},
			{Name: "x", Words: []string{"x"}, InSubst: true},
		}},
		{"x=1", []segView{{Assigns: []string{"x=1"}}}},
		{"> out", []segView{{Redirs: []string{"> out"}}}},
		{"cat <(a) >(b)", []segView{
			{Name: "cat", Words: []string{"cat", "<(a)", ">(b)"}},
			{Name: "a", Words: []string{"a"}, InSubst: true},
			{Name: "b", Words: []string{"b"}, InSubst: true},
		}},
		{"time -p ls -l > f", []segView{
			{Name: "time", Words: []string{"time", "-p", "ls", "-l"}, Redirs: []string{"> f"}},
		}},
		{"export A=1 B; let x=1", []segView{
			{Name: "export", Words: []string{"export", "A=1", "B"}},
			{Name: "let", Words: []string{"let", "x=1"}, Joiner: ";"},
		}},
		{"cat <<EOF\n$(id)\nEOF", []segView{
			{Name: "cat", Words: []string{"cat"}, Redirs: []string{"<< EOF"}},
			{Name: "id", Words: []string{"id"}, InSubst: true},
		}},
		{"ls \\\n  -la # rm -rf /", []segView{{Name: "ls", Words: []string{"ls", "-la"}}}},
		{"coproc x", []segView{{Name: "x", Words: []string{"x"}, Bg: true}}},
		{"echo ${x:-$(y)} $((1 + $(z)))", []segView{
			{Name: "echo", Words: []string{"echo", "${x:-$(y)}", "$((1 + $(z)))"}},
			{Name: "y", Words: []string{"y"}, InSubst: true},
			{Name: "z", Words: []string{"z"}, InSubst: true},
		}},
		{"", nil},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.cmd)
		if diff := cmp.Diff(tc.want, view(s), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Parse(%q) segments (-want +got):\n%s", tc.cmd, diff)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	type flags struct{ Subst, Bg, Pipe, Control bool }
	tests := []struct {
		cmd  string
		want flags
	}{
		{"a && b; c", flags{}},
		{"a | b", flags{Pipe: true}},
		{"a |& b", flags{Pipe: true}},
		{"a &", flags{Bg: true}},
		{"a & b", flags{Bg: true}},
		{"coproc a", flags{Bg: true, Control: true}},
		{"echo $(a)", flags{Subst: true}},
		{"echo `a`", flags{Subst: true}},
		{`echo "$(a)"`, flags{Subst: true}},
		{"cat <(a)", flags{Subst: true}},
		{"tee >(a)", flags{Subst: true}},
		{"ls > $(a)", flags{Subst: true}},
		{"cat <<EOF\n`a`\nEOF", flags{Subst: true}},
		{"cat <<'EOF'\n`a`\nEOF", flags{}},
		{"X=$(a) b", flags{Subst: true}},
		{"echo ${x:-$(a)}", flags{Subst: true}},
		{"echo '$(a)'", flags{}},
		{`echo \$\(a\)`, flags{}},
		{"(a)", flags{Control: true}},
		{"{ a; }", flags{Control: true}},
		{"if a; then b; fi", flags{Control: true}},
		{"for x in y; do a; done", flags{Control: true}},
		{"while a; do b; done", flags{Control: true}},
		{"until a; do b; done", flags{Control: true}},
		{"case x in y) a;; esac", flags{Control: true}},
		{"f() { a; }", flags{Control: true}},
		{"[[ -f x ]]", flags{Control: true}},
		{"(( x++ ))", flags{Control: true}},
		{"time a | b", flags{Pipe: true, Control: true}},
		{"time a", flags{}},
		{"! a", flags{}},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.cmd)
		got := flags{s.HasSubstitution, s.HasBackground, s.HasPipe, s.HasControl}
		if got != tc.want {
			t.Errorf("Parse(%q) flags = %+v, want %+v", tc.cmd, got, tc.want)
		}
	}
}

func TestParseError(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{`echo "unterminated`, "a &&", "if then", "echo $(", "ls )"} {
		_, err := Parse(cmd)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", cmd)
			continue
		}
		var se *sema.Error
		if !errors.As(err, &se) || se.Code != CodeParse {
			t.Errorf("Parse(%q) error = %v, want code %s", cmd, err, CodeParse)
		}
		if se != nil && se.Err == nil {
			t.Errorf("Parse(%q) error has no cause", cmd)
		}
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want Word
	}{
		{`abc`, Word{Raw: `abc`, Lit: "abc", Static: true, OptionSafe: true}},
		{`'a b'`, Word{Raw: `'a b'`, Lit: "a b", Static: true, Quoted: true, OptionSafe: true}},
		{`"a\$b\q\\"`, Word{Raw: `"a\$b\q\\"`, Lit: `a$b\q\`, Static: true, Quoted: true, OptionSafe: true}},
		{`a\ b`, Word{Raw: `a\ b`, Lit: "a b", Static: true, Quoted: true, OptionSafe: true}},
		{`r\m`, Word{Raw: `r\m`, Lit: "rm", Static: true, Quoted: true, OptionSafe: true}},
		{`"rm"`, Word{Raw: `"rm"`, Lit: "rm", Static: true, Quoted: true, OptionSafe: true}},
		{`$'a\tb\n'`, Word{Raw: `$'a\tb\n'`, Lit: "a\tb\n", Static: true, Quoted: true, OptionSafe: true}},
		{`$'\x41\101\'\\'`, Word{Raw: `$'\x41\101\'\\'`, Lit: `AA'\`, Static: true, Quoted: true, OptionSafe: true}},
		// \u depends on the locale bash runs in: outside UTF-8 it stays as written.
		{`$'\u00e9'`, Word{Raw: `$'\u00e9'`, Quoted: true}},
		{`$'\cA'`, Word{Raw: `$'\cA'`, Quoted: true}},
		{`$'a\0b'`, Word{Raw: `$'a\0b'`, Quoted: true}},
		{`$"x"`, Word{Raw: `$"x"`, Quoted: true}},
		{`~/x`, Word{Raw: `~/x`, Lit: "~/x", Tilde: true}},
		{`~root`, Word{Raw: `~root`, Lit: "~root", Tilde: true}},
		{`'~/x'`, Word{Raw: `'~/x'`, Lit: "~/x", Static: true, Quoted: true, OptionSafe: true}},
		{`\~/x`, Word{Raw: `\~/x`, Lit: "~/x", Static: true, Quoted: true, OptionSafe: true}},
		{`of=~/x`, Word{Raw: `of=~/x`, OptionSafe: true}},
		{`a:~/x`, Word{Raw: `a:~/x`, OptionSafe: true}},
		{`HEAD~1`, Word{Raw: `HEAD~1`, Lit: "HEAD~1", Static: true, OptionSafe: true}},
		{`*.go`, Word{Raw: `*.go`}},
		{`a?c`, Word{Raw: `a?c`, OptionSafe: true}},
		{`a[bc]`, Word{Raw: `a[bc]`, OptionSafe: true}},
		{`'*.go'`, Word{Raw: `'*.go'`, Lit: "*.go", Static: true, Quoted: true, OptionSafe: true}},
		{`\*.go`, Word{Raw: `\*.go`, Lit: "*.go", Static: true, Quoted: true, OptionSafe: true}},
		{`{a,b}`, Word{Raw: `{a,b}`}},
		{`x{1..3}`, Word{Raw: `x{1..3}`, OptionSafe: true}},
		{`"{a,b}"`, Word{Raw: `"{a,b}"`, Lit: "{a,b}", Static: true, Quoted: true, OptionSafe: true}},
		{`@{u}`, Word{Raw: `@{u}`, Lit: "@{u}", Static: true, OptionSafe: true}},
		{`{}`, Word{Raw: `{}`, Lit: "{}", Static: true, OptionSafe: true}},
		{`$x`, Word{Raw: `$x`}},
		{`"$x"`, Word{Raw: `"$x"`, Quoted: true}},
		{`a$(b)`, Word{Raw: `a$(b)`}},
		{`$((1+2))`, Word{Raw: `$((1+2))`}},
		{`@(a|b)`, Word{Raw: `@(a|b)`}},
		{`--output=x`, Word{Raw: `--output=x`, Lit: "--output=x", Static: true}},
		{`''`, Word{Raw: `''`, Lit: "", Static: true, Quoted: true, OptionSafe: true}},
	}
	for _, tc := range tests {
		s := mustParse(t, "cmd "+tc.src)
		got := s.Segments[0].Words[1]
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("word %s (-want +got):\n%s", tc.src, diff)
		}
	}
}

func TestWordOptionSafety(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		safe bool
	}{
		{`./"$f"`, true},
		{`src/*`, true},
		{`a{b,-c}`, true},
		{`"$f"`, false},
		{`$f`, false},
		{`./$f`, false}, // unquoted: field splitting can make "./a -delete"
		{`*`, false},
		{`{-a,b}`, false},
		{`-x`, false},
		{`"-$f"`, false},
		{`~/x`, false},
		{`$"x"`, false},
		{`{}`, true},
		{`''`, true},
	}
	for _, tc := range tests {
		s := mustParse(t, "cmd "+tc.src)
		if got := s.Segments[0].Words[1].OptionSafe; got != tc.safe {
			t.Errorf("OptionSafe(%s) = %v, want %v", tc.src, got, tc.safe)
		}
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd    string
		op, fd string
		writes bool
	}{
		{"a > f", ">", "", true},
		{"a >> f", ">>", "", true},
		{"a 2> f", "2>", "2", true},
		{"a &> f", "&>", "", true},
		{"a &>> f", "&>>", "", true},
		{"a >| f", ">|", "", true},
		{"a <> f", "<>", "", true},
		{"a < f", "<", "", false},
		{"a 2>&1", "2>&", "2", false},
		{"a >&-", ">&", "", false},
		{"a >& f", ">&", "", true},
		{"a >& $fd", ">&", "", true},
		{"a <&3", "<&", "", false},
		{"a <<< s", "<<<", "", false},
		{"a <<E\nx\nE", "<<", "", false},
		{"a {fd}> f", "{fd}>", "{fd}", true},
	}
	for _, tc := range tests {
		s := mustParse(t, tc.cmd)
		r := s.Segments[0].Redirects[0]
		if r.Op != tc.op || r.FD != tc.fd || r.Writes != tc.writes {
			t.Errorf("%q: redirect = {Op:%q FD:%q Writes:%v}, want {%q %q %v}", tc.cmd, r.Op, r.FD, r.Writes, tc.op, tc.fd, tc.writes)
		}
	}
}

func TestCompoundRedirects(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "{ a; b; } > out 2>&1; (c) < in")
	if len(s.CompoundRedirects) != 3 {
		t.Fatalf("CompoundRedirects = %d, want 3", len(s.CompoundRedirects))
	}
	for _, seg := range s.Segments {
		if len(seg.Redirects) != 0 {
			t.Errorf("segment %q owns compound redirects %v", seg.Name(), seg.Redirects)
		}
	}
	if r := s.CompoundRedirects[0]; r.Target.Lit != "out" || !r.Writes {
		t.Errorf("first compound redirect = %+v", r)
	}
}

func TestSegmentName(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"ls -l":        "ls",
		"/bin/ls":      "/bin/ls",
		`"ls"`:         "",
		`l\s`:          "",
		`$LS`:          "",
		"~/bin/x":      "",
		"l\\\ns":       "ls",
		"FOO=1":        "",
		"FOO=1 ls":     "ls",
		"> f":          "",
		"*ls":          "",
		"declare -x A": "declare",
	}
	for cmd, want := range tests {
		if got := mustParse(t, cmd).Segments[0].Name(); got != want {
			t.Errorf("Name(%q) = %q, want %q", cmd, got, want)
		}
	}
}
