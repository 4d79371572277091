package permission

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
)

func TestParseRuleValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		tool    string
		spec    string
		kind    ruleKind
		words   []string
		anchor  anchor
		pattern string
		domain  string
	}{
		{in: "Bash", tool: "Bash", kind: kindTool},
		{in: "  Read  ", tool: "Read", kind: kindTool},
		{in: "Bash(*)", tool: "Bash", spec: "*", kind: kindTool},
		{in: "Bash(npm run test:*)", tool: "Bash", spec: "npm run test:*", kind: kindBashPrefix, words: []string{"npm", "run", "test"}},
		{in: "Bash(git diff *)", tool: "Bash", spec: "git diff *", kind: kindBashPrefix, words: []string{"git", "diff"}},
		{in: "Bash(npm:*)", tool: "Bash", spec: "npm:*", kind: kindBashPrefix, words: []string{"npm"}},
		{in: "Bash(git status)", tool: "Bash", spec: "git status", kind: kindBashExact, words: []string{"git", "status"}},
		{in: `Bash(git commit -m "a b")`, tool: "Bash", spec: `git commit -m "a b"`, kind: kindBashExact, words: []string{"git", "commit", "-m", "a b"}},
		{in: `Bash(echo 'x*y')`, tool: "Bash", spec: `echo 'x*y'`, kind: kindBashExact, words: []string{"echo", "x*y"}},
		{in: `Bash(r\m x)`, tool: "Bash", spec: `r\m x`, kind: kindBashExact, words: []string{"rm", "x"}},
		{in: "Read(./secrets/**)", tool: "Read", spec: "./secrets/**", kind: kindPath, anchor: anchorRoot, pattern: "secrets/**"},
		{in: "Edit(src/**)", tool: "Edit", spec: "src/**", kind: kindPath, anchor: anchorRoot, pattern: "src/**"},
		{in: "Edit(/docs/*.md)", tool: "Edit", spec: "/docs/*.md", kind: kindPath, anchor: anchorRoot, pattern: "docs/*.md"},
		{in: "Edit(//etc/hosts)", tool: "Edit", spec: "//etc/hosts", kind: kindPath, anchor: anchorAbs, pattern: "etc/hosts"},
		{in: "Read(~/.ssh/**)", tool: "Read", spec: "~/.ssh/**", kind: kindPath, anchor: anchorHome, pattern: ".ssh/**"},
		{in: "Read(~)", tool: "Read", spec: "~", kind: kindPath, anchor: anchorHome, pattern: ""},
		{in: "Read(*.pem)", tool: "Read", spec: "*.pem", kind: kindPath, anchor: anchorAny, pattern: "*.pem"},
		{in: "Read(secrets/)", tool: "Read", spec: "secrets/", kind: kindPath, anchor: anchorAny, pattern: "secrets"},
		{in: "Read(.)", tool: "Read", spec: ".", kind: kindPath, anchor: anchorRoot, pattern: ""},
		{in: "Write(out/**)", tool: "Write", spec: "out/**", kind: kindPath, anchor: anchorRoot, pattern: "out/**"},
		{in: "WebFetch(domain:example.com)", tool: "WebFetch", spec: "domain:example.com", kind: kindDomain, domain: "example.com"},
		{in: "WebFetch(domain:*.Example.com)", tool: "WebFetch", spec: "domain:*.Example.com", kind: kindDomain, domain: "*.example.com"},
		{in: "mcp__github", tool: "mcp__github", kind: kindServer},
		{in: "mcp__github__*", tool: "mcp__github__*", kind: kindServer},
		{in: "mcp__github__create_issue", tool: "mcp__github__create_issue", kind: kindTool},
		{in: "mcp__my-server__do-it", tool: "mcp__my-server__do-it", kind: kindTool},
		{in: "TodoWrite", tool: "TodoWrite", kind: kindTool},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(tt.in)
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tt.in, err)
			}
			want := Rule{Tool: tt.tool, Specifier: tt.spec, kind: tt.kind, words: tt.words, anchor: tt.anchor, pattern: tt.pattern, domain: tt.domain}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("ParseRule(%q) = %#v, want %#v", tt.in, r, want)
			}
			back, err := ParseRule(r.String())
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Errorf("round trip of %q through %q = %#v, %v", tt.in, r.String(), back, err)
			}
		})
	}
}

func TestParseRuleInvalid(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"   ",
		"Bash(",
		"Bash()",
		"Bash(ls) extra",
		"(ls)",
		"1Bash",
		"Ba sh",
		"Bash(ls && rm x)",
		"Bash(ls; rm x)",
		"Bash(ls | sh)",
		"Bash(ls > out)",
		"Bash(FOO=1 ls)",
		"Bash(echo $(id))",
		"Bash(echo $HOME)",
		"Bash(ls *.go)",
		"Bash(git * main)",
		"Bash(:*)",
		"Bash(ls &)",
		"Read(../x)",
		"Edit(src/../../etc)",
		"Read(~root/x)",
		"Read(a//b)",
		"Read([)",
		"WebFetch(example.com)",
		"WebFetch(domain:)",
		"WebFetch(domain:exa mple.com)",
		"WebFetch(domain:a..b)",
		"Task(explore)",
		"mcp__github(x)",
		"mcp__github__tool(x)",
		"mcp__",
		"mcp__a__b__*",
		"Bash__*",
		"Bash(\"unterminated)",
	} {
		_, err := ParseRule(in)
		if !sema.IsCode(err, CodeRuleInvalid) {
			t.Errorf("ParseRule(%q) error = %v, want %s", in, err, CodeRuleInvalid)
			continue
		}
		var se *sema.Error
		if e, ok := err.(*sema.Error); ok {
			se = e
		}
		if se == nil || se.Detail["rule"] != strings.TrimSpace(in) || !strings.Contains(se.Message, strconv.Quote(strings.TrimSpace(in))) {
			t.Errorf("ParseRule(%q) error does not name the rule: %v", in, err)
		}
	}
}

func TestSplitRuleList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"Read,Write", []string{"Read", "Write"}},
		{"Read Bash(git diff *)", []string{"Read", "Bash(git diff *)"}},
		{" Bash(npm run test:*), Edit(src/**) ,", []string{"Bash(npm run test:*)", "Edit(src/**)"}},
		{"Bash(echo a,b)", []string{"Bash(echo a,b)"}},
		{"", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, SplitRuleList(tt.in)); diff != "" {
			t.Errorf("SplitRuleList(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	rs, err := RulesFromFlags([]string{"Read,Bash(git diff *)"}, []string{"Bash(rm:*)"})
	if err != nil || len(rs.Allow) != 2 || len(rs.Deny) != 1 || rs.Deny[0].String() != "Bash(rm:*)" {
		t.Errorf("RulesFromFlags = %+v, %v", rs, err)
	}
	if _, err := RulesFromFlags([]string{"Bash(ls *.go)"}, nil); !sema.IsCode(err, CodeRuleInvalid) {
		t.Errorf("RulesFromFlags with a bad rule: %v", err)
	}
}

func TestRuleSetMergeKeepsEveryLayer(t *testing.T) {
	t.Parallel()
	a := mustRules(t, []string{"Read"}, []string{"Bash(rm:*)"}, nil)
	b := mustRules(t, []string{"Bash"}, nil, []string{"Edit"})
	m := a.Merge(b)
	if len(m.Allow) != 2 || len(m.Deny) != 1 || len(m.Ask) != 1 {
		t.Fatalf("Merge = %+v", m)
	}
	m.Allow[0] = MustParseRule("Write")
	if a.Allow[0].Tool != "Read" {
		t.Error("Merge shares the layer's backing array")
	}
}

func TestPathRuleGlobs(t *testing.T) {
	t.Parallel()
	root, home := "/w/proj", "/w/home"
	tests := []struct {
		rule string
		path string
		want bool
	}{
		{"Read(./secrets/**)", "/w/proj/secrets/a.txt", true},
		{"Read(./secrets/**)", "/w/proj/secrets", true},
		{"Read(./secrets/**)", "/w/proj/other/secrets/a", false},
		{"Read(/secrets)", "/w/proj/secrets/deep/x", true},
		{"Read(secrets/)", "/w/proj/a/b/secrets/x", true},
		{"Read(*.pem)", "/w/proj/a/b/key.pem", true},
		{"Read(*.pem)", "/w/proj/key.pem", true},
		{"Read(*.pem)", "/w/other/key.pem", false},
		{"Edit(src/**)", "/w/proj/src/a/b.go", true},
		{"Edit(src/**)", "/w/proj/srcx/b.go", false},
		{"Edit(//etc/hosts)", "/etc/hosts", true},
		{"Edit(//etc/**)", "/etc/ssh/sshd_config", true},
		{"Read(~/.ssh/**)", "/w/home/.ssh/id_rsa", true},
		{"Read(~/.ssh/**)", "/w/proj/.ssh/id_rsa", false},
		{"Read(.)", "/w/proj/x", true},
		{"Read(.)", "/w/projx", false},
	}
	for _, tt := range tests {
		r := MustParseRule(tt.rule)
		if got := r.pathMatches(tt.path, root, home); got != tt.want {
			g, _ := r.globFor(root, home)
			t.Errorf("%s on %s = %v, want %v (glob %q)", tt.rule, tt.path, got, tt.want, g)
		}
	}
	// A root holding glob characters is matched literally.
	r := MustParseRule("Edit(src/**)")
	if !r.pathMatches("/w/[x]/src/a", "/w/[x]", "") || r.pathMatches("/w/x/src/a", "/w/[x]", "") {
		t.Error("the root's glob characters are not escaped")
	}
	// A home rule on a leg with no home names nothing.
	if hr := MustParseRule("Read(~/.ssh/**)"); hr.pathMatches("/.ssh/x", root, "") {
		t.Error("a ~ rule matched with no home directory")
	}
}

func TestDomainRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule, url   string
		match, okay bool
	}{
		{"WebFetch(domain:example.com)", "https://example.com/x", true, true},
		{"WebFetch(domain:example.com)", "https://EXAMPLE.com:8443/x", true, true},
		{"WebFetch(domain:example.com)", "https://api.example.com/x", false, true},
		{"WebFetch(domain:example.com)", "https://example.com.evil.org/", false, true},
		{"WebFetch(domain:*.example.com)", "https://api.example.com/x", true, true},
		{"WebFetch(domain:*.example.com)", "https://example.com/x", false, true},
		{"WebFetch(domain:example.com)", "not a url", false, false},
	}
	for _, tt := range tests {
		r := MustParseRule(tt.rule)
		m, ok := r.domainMatches(tt.url)
		if m != tt.match || ok != tt.okay {
			t.Errorf("%s on %s = %v, %v; want %v, %v", tt.rule, tt.url, m, ok, tt.match, tt.okay)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"Bash", "Bash(npm run test:*)", "Bash(git diff *)", "Bash(git status)", `Bash(echo "a b")`,
		"Read(./secrets/**)", "Edit(src/**)", "Edit(//etc/x)", "Read(~/.ssh/**)", "WebFetch(domain:example.com)",
		"mcp__server", "mcp__server__tool", "mcp__s__*", "Read(*.pem)", `Bash(r\m x)`, "Bash($'x')"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if !sema.IsCode(err, CodeRuleInvalid) {
				t.Fatalf("ParseRule(%q) error without the rule code: %v", s, err)
			}
			return
		}
		back, err := ParseRule(r.String())
		if err != nil {
			t.Fatalf("ParseRule(%q).String() = %q does not parse: %v", s, r.String(), err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip of %q: %#v != %#v", s, back, r)
		}
		if back.String() != r.String() {
			t.Fatalf("String not stable: %q != %q", back.String(), r.String())
		}
	})
}
