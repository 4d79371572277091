package shellscan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sema-agent/sema"
)

func TestPrefixAndExactMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd    string
		rule   []string
		prefix bool
		exact  bool
	}{
		{"npm run test", []string{"npm", "run", "test"}, true, true},
		{"npm run test -- --watch", []string{"npm", "run", "test"}, true, false},
		{"npm run testing", []string{"npm", "run", "test"}, false, false},
		{"npm run", []string{"npm", "run", "test"}, false, false},
		{`"npm" run 'test'`, []string{"npm", "run", "test"}, true, true},
		{`npm run $T`, []string{"npm", "run", "test"}, false, false},
		{`npm $(echo run) test`, []string{"npm", "run", "test"}, false, false},
		{`npm run test $(rm x)`, []string{"npm", "run", "test"}, true, false},
		{"npm run test > /etc/passwd", []string{"npm", "run", "test"}, false, false},
		{"npm run test > /dev/null 2>&1", []string{"npm", "run", "test"}, true, true},
		{"npm run test < input", []string{"npm", "run", "test"}, true, true},
		{"NODE_OPTIONS=--require=x npm run test", []string{"npm", "run", "test"}, false, false},
		{"git status", []string{"git", "status"}, true, true},
		{"git status --short", []string{"git", "status"}, true, false},
		{"git", []string{"git", "status"}, false, false},
		{"ls", nil, false, false},
	}
	for _, tc := range tests {
		seg := mustParse(t, tc.cmd).Segments[0]
		if got := PrefixMatch(seg, tc.rule); got != tc.prefix {
			t.Errorf("PrefixMatch(%q, %q) = %v, want %v", tc.cmd, tc.rule, got, tc.prefix)
		}
		if got := ExactMatch(seg, tc.rule); got != tc.exact {
			t.Errorf("ExactMatch(%q, %q) = %v, want %v", tc.cmd, tc.rule, got, tc.exact)
		}
	}
}

func TestPrefixMatchNeverCrossesSegments(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "npm run test && rm -rf /")
	if !PrefixMatch(s.Segments[0], []string{"npm", "run", "test"}) {
		t.Error("first segment should match")
	}
	if PrefixMatch(s.Segments[1], []string{"npm", "run", "test"}) {
		t.Error("second segment must not match")
	}
}

func TestRulePattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec   string
		words  []string
		prefix bool
		bad    bool
	}{
		{"npm run test:*", []string{"npm", "run", "test"}, true, false},
		{"git status", []string{"git", "status"}, false, false},
		{`git commit -m "a b":*`, []string{"git", "commit", "-m", "a b"}, true, false},
		{"ls", []string{"ls"}, false, false},
		{"a && b", nil, false, true},
		{"a | b", nil, false, true},
		{"a > f", nil, false, true},
		{"FOO=1 a", nil, false, true},
		{"a $x", nil, false, true},
		{"a *.go", nil, false, true},
		{"a $(b)", nil, false, true},
		{`a "unterminated`, nil, false, true},
		{"", nil, false, true},
		{":*", nil, false, true},
	}
	for _, tc := range tests {
		words, prefix, err := RulePattern(tc.spec)
		if tc.bad {
			if !sema.IsCode(err, CodeRuleInvalid) {
				t.Errorf("RulePattern(%q) error = %v, want code %s", tc.spec, err, CodeRuleInvalid)
			}
			continue
		}
		if err != nil {
			t.Errorf("RulePattern(%q): %v", tc.spec, err)
			continue
		}
		if diff := cmp.Diff(tc.words, words, cmpopts.EquateEmpty()); diff != "" || prefix != tc.prefix {
			t.Errorf("RulePattern(%q) = %q, %v; want %q, %v", tc.spec, words, prefix, tc.words, tc.prefix)
		}
	}
}
