package rulematch

import (
	"reflect"
	"testing"
)

func mustParse(s string) Rule {
	r, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return r
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		tool    string
		spec    string
		kind    Kind
		words   []string
		anchor  Anchor
		pattern string
		domain  string
	}{
		{in: "Bash", tool: "Bash", kind: KindTool},
		{in: "  Read  ", tool: "Read", kind: KindTool},
		{in: "Bash(*)", tool: "Bash", spec: "*", kind: KindTool},
		{in: "Bash(npm run test:*)", tool: "Bash", spec: "npm run test:*", kind: KindBashPrefix, words: []string{"npm", "run", "test"}},
		{in: "Bash(git diff *)", tool: "Bash", spec: "git diff *", kind: KindBashPrefix, words: []string{"git", "diff"}},
		{in: "Bash(npm:*)", tool: "Bash", spec: "npm:*", kind: KindBashPrefix, words: []string{"npm"}},
		{in: "Bash(git status)", tool: "Bash", spec: "git status", kind: KindBashExact, words: []string{"git", "status"}},
		{in: `Bash(git commit -m "a b")`, tool: "Bash", spec: `git commit -m "a b"`, kind: KindBashExact, words: []string{"git", "commit", "-m", "a b"}},
		{in: `Bash(echo 'x*y')`, tool: "Bash", spec: `echo 'x*y'`, kind: KindBashExact, words: []string{"echo", "x*y"}},
		{in: `Bash(r\m x)`, tool: "Bash", spec: `r\m x`, kind: KindBashExact, words: []string{"rm", "x"}},
		{in: "Read(./secrets/**)", tool: "Read", spec: "./secrets/**", kind: KindPath, anchor: AnchorRoot, pattern: "secrets/**"},
		{in: "Edit(src/**)", tool: "Edit", spec: "src/**", kind: KindPath, anchor: AnchorRoot, pattern: "src/**"},
		{in: "Edit(/docs/*.md)", tool: "Edit", spec: "/docs/*.md", kind: KindPath, anchor: AnchorRoot, pattern: "docs/*.md"},
		{in: "Edit(//etc/hosts)", tool: "Edit", spec: "//etc/hosts", kind: KindPath, anchor: AnchorAbs, pattern: "etc/hosts"},
		{in: "Read(~/.ssh/**)", tool: "Read", spec: "~/.ssh/**", kind: KindPath, anchor: AnchorHome, pattern: ".ssh/**"},
		{in: "Read(~)", tool: "Read", spec: "~", kind: KindPath, anchor: AnchorHome, pattern: ""},
		{in: "Read(*.pem)", tool: "Read", spec: "*.pem", kind: KindPath, anchor: AnchorAny, pattern: "*.pem"},
		{in: "Read(secrets/)", tool: "Read", spec: "secrets/", kind: KindPath, anchor: AnchorAny, pattern: "secrets"},
		{in: "Read(.)", tool: "Read", spec: ".", kind: KindPath, anchor: AnchorRoot, pattern: ""},
		{in: "Write(out/**)", tool: "Write", spec: "out/**", kind: KindPath, anchor: AnchorRoot, pattern: "out/**"},
		{in: "WebFetch(domain:example.com)", tool: "WebFetch", spec: "domain:example.com", kind: KindDomain, domain: "example.com"},
		{in: "WebFetch(domain:*.Example.com)", tool: "WebFetch", spec: "domain:*.Example.com", kind: KindDomain, domain: "*.example.com"},
		{in: "mcp__github", tool: "mcp__github", kind: KindServer},
		{in: "mcp__github__*", tool: "mcp__github__*", kind: KindServer},
		{in: "mcp__github__create_issue", tool: "mcp__github__create_issue", kind: KindTool},
		{in: "mcp__my-server__do-it", tool: "mcp__my-server__do-it", kind: KindTool},
		{in: "TodoWrite", tool: "TodoWrite", kind: KindTool},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			want := Rule{Tool: tt.tool, Specifier: tt.spec, Kind: tt.kind, Words: tt.words, Anchor: tt.anchor, Pattern: tt.pattern, Domain: tt.domain}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("Parse(%q) = %#v, want %#v", tt.in, r, want)
			}
			back, err := Parse(r.String())
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Errorf("round trip of %q through %q = %#v, %v", tt.in, r.String(), back, err)
			}
		})
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
		r := mustParse(tt.rule)
		if got := r.PathMatches(tt.path, root, home); got != tt.want {
			g, _ := r.GlobFor(root, home)
			t.Errorf("%s on %s = %v, want %v (glob %q)", tt.rule, tt.path, got, tt.want, g)
		}
	}
	// A root holding glob characters is matched literally.
	r := mustParse("Edit(src/**)")
	if !r.PathMatches("/w/[x]/src/a", "/w/[x]", "") || r.PathMatches("/w/x/src/a", "/w/[x]", "") {
		t.Error("the root's glob characters are not escaped")
	}
	// A home rule on a leg with no home names nothing.
	if hr := mustParse("Read(~/.ssh/**)"); hr.PathMatches("/.ssh/x", root, "") {
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
		r := mustParse(tt.rule)
		m, ok := r.DomainMatches(tt.url)
		if m != tt.match || ok != tt.okay {
			t.Errorf("%s on %s = %v, %v; want %v, %v", tt.rule, tt.url, m, ok, tt.match, tt.okay)
		}
	}
}

// The gate compiles permission.Rule values again from their text, so a compiled rule
// must survive the trip through String unchanged.
func FuzzCompiledRoundTrip(f *testing.F) {
	for _, s := range []string{"Bash", "Bash(npm run test:*)", "Bash(git diff *)", `Bash(echo "a b")`,
		"Read(./secrets/**)", "Edit(//etc/x)", "Read(~/.ssh/**)", "WebFetch(domain:*.Example.com)",
		"mcp__server", "mcp__s__*", "Read(*.pem)", "Read(secrets/)", `Bash(r\m x)`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(r.String())
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("compiled round trip of %q through %q = %#v, %v; want %#v", s, r.String(), back, err, r)
		}
	})
}
