package gate

import (
	"context"
	"slices"
	"testing"

	"github.com/sema-agent/sema/permission"
)

func ruleTexts(rs []permission.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

// Matching names every rule that has a say about a call — not only the one Decide
// stops at — and never an allow rule that covers only part of a command.
func TestMatchingNamesEveryRuleThatHasASay(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	rules := mustRules(t,
		[]string{"Bash(git status)", "Bash(git push:*)", "Read"},
		[]string{"Bash(git push --force:*)", "Edit(src/**)"},
		[]string{"Bash(git:*)"})
	g := l.gate(permission.ModeDefault, rules)
	ctx := context.Background()

	m, err := g.Matching(ctx, l.bashCall("git push --force origin main", false))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ruleTexts(m.Deny), []string{"Bash(git push --force:*)"}) || !slices.Equal(ruleTexts(m.Ask), []string{"Bash(git:*)"}) ||
		!slices.Equal(ruleTexts(m.Allow), []string{"Bash(git push:*)"}) {
		t.Errorf("force push: %+v", m)
	}
	if d := g.Decide(ctx, l.bashCall("git push --force origin main", false)); d.Behavior != permission.Deny {
		t.Errorf("calibration: the deny rule ends the fold: %+v", d)
	}

	m, _ = g.Matching(ctx, l.bashCall("git status && rm -rf build", false))
	if len(m.Allow) != 0 {
		t.Errorf("an allow rule covering one segment of two was named: %v", ruleTexts(m.Allow))
	}

	m, _ = g.Matching(ctx, l.fileCall(g, "Edit", "src/a.go"))
	if !slices.Equal(ruleTexts(m.Deny), []string{"Edit(src/**)"}) || len(m.Allow) != 0 {
		t.Errorf("edit: %+v", m)
	}
}
