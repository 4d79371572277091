package permission

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sema-agent/sema"
)

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
	a, err := ParseRules([]string{"Read"}, []string{"Bash(rm:*)"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseRules([]string{"Bash"}, nil, []string{"Edit"})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Merge(b)
	if len(m.Allow) != 2 || len(m.Deny) != 1 || len(m.Ask) != 1 {
		t.Fatalf("Merge = %+v", m)
	}
	m.Allow[0] = MustParseRule("Write")
	if a.Allow[0].Tool != "Read" {
		t.Error("Merge shares the layer's backing array")
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
