package gate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

func allowHook(context.Context, permission.Call) (permission.HookDecision, error) {
	return permission.HookDecision{Behavior: permission.Allow, Reason: "the hook trusts it"}, nil
}

func rewriteHook(context.Context, permission.Call) (permission.HookDecision, error) {
	return permission.HookDecision{Behavior: permission.Allow, UpdatedInput: json.RawMessage(`{"env":"staging"}`)}, nil
}

func askHook(context.Context, permission.Call) (permission.HookDecision, error) {
	return permission.HookDecision{Behavior: permission.Ask, Reason: "the hook wants a look"}, nil
}

func denyHook(context.Context, permission.Call) (permission.HookDecision, error) {
	return permission.HookDecision{Behavior: permission.Deny, Reason: "not today"}, nil
}

// A tool that requires a person for every call: every station's answer but a deny
// becomes a person-only question — an allow rule, a hook's allow, the mode's allow of a
// read tool and bypassPermissions included — and every deny still refuses it.
func TestRequiresUserInteractionEveryStation(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deploy := permission.Call{Tool: "deploy", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectExec,
		RequiresUserInteraction: true, Input: json.RawMessage(`{"env":"prod"}`), Scope: l.scope}
	read := deploy
	read.Effect = tools.EffectRead // a declared read: the mode's own allow, in every mode
	passthrough := deploy
	passthrough.Passthrough = true
	rows := []struct {
		name  string
		call  permission.Call
		rules permission.RuleSet
		hooks []permission.Hook
		want  [6]string // default, acceptEdits, plan, auto, dontAsk, bypassPermissions
	}{
		{name: "no rule", call: deploy, want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "declared read", call: read, want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "passthrough", call: passthrough, want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "allow rule", call: deploy, rules: mustRules(t, []string{"deploy"}, nil, nil), want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "hook allow", call: deploy, hooks: []permission.Hook{allowHook}, want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "hook allow and allow rule", call: read, rules: mustRules(t, []string{"deploy"}, nil, nil), hooks: []permission.Hook{allowHook},
			want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "ask rule", call: deploy, rules: mustRules(t, nil, nil, []string{"deploy"}), want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "hook ask", call: deploy, hooks: []permission.Hook{askHook}, want: [6]string{"ask!", "ask!", "ask!", "ask!", "ask!", "ask!"}},
		{name: "deny rule", call: deploy, rules: mustRules(t, []string{"deploy"}, []string{"deploy"}, nil), hooks: []permission.Hook{allowHook},
			want: [6]string{"deny", "deny", "deny", "deny", "deny", "deny"}},
		{name: "hook deny", call: deploy, rules: mustRules(t, []string{"deploy"}, nil, nil), hooks: []permission.Hook{denyHook},
			want: [6]string{"deny", "deny", "deny", "deny", "deny", "deny"}},
	}
	for _, row := range rows {
		for i, m := range matrixModes {
			g := l.gate(m, row.rules, row.hooks...)
			d := g.Decide(context.Background(), row.call)
			if got := verdict(d); got != row.want[i] {
				t.Errorf("%s under %s = %s (%s: %s), want %s", row.name, m, got, d.DecidedBy, d.Reason, row.want[i])
				continue
			}
			if d.Behavior == permission.Ask && !strings.HasPrefix(d.Reason, "deploy requires a person's approval for every call.") {
				t.Errorf("%s under %s: the question %q does not say why only a person may answer", row.name, m, d.Reason)
			}
		}
	}
}

// The question keeps what raised it: the asking station's sentence after the
// requirement's, and a hook's rewrite, which the person then judges.
func TestRequiresUserInteractionKeepsTheQuestion(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deploy := permission.Call{Tool: "deploy", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectExec,
		RequiresUserInteraction: true, Input: json.RawMessage(`{"env":"prod"}`), Scope: l.scope}
	g := l.gate(permission.ModeDefault, mustRules(t, nil, nil, []string{"deploy"}))
	d := g.Decide(context.Background(), deploy)
	if d.DecidedBy != permission.LayerRule || d.Rule != "deploy" || !strings.Contains(d.Reason, "The rule deploy asks") {
		t.Errorf("the ask rule's question was lost: %+v", d)
	}
	g = l.gate(permission.ModeBypassPermissions, permission.RuleSet{}, rewriteHook)
	d = g.Decide(context.Background(), deploy)
	if verdict(d) != "ask!" || d.DecidedBy != permission.LayerTool || string(d.UpdatedInput) != `{"env":"staging"}` || d.Gate != permission.GateToolPermission {
		t.Errorf("a hook's rewritten allow = %+v, want the tool's person-only question on the rewrite", d)
	}
}

// Who answers: only a person. The classifier is never asked, dontAsk and a leg with
// nobody to ask refuse, and a person's yes runs the call.
func TestRequiresUserInteractionAnswers(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deploy := permission.Call{Tool: "deploy", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectExec,
		RequiresUserInteraction: true, Input: json.RawMessage(`{"env":"prod"}`), Scope: l.scope}
	rules := mustRules(t, []string{"deploy"}, nil, nil)
	cases := []struct {
		mode     permission.Mode
		approver *countingApprover // nil: nobody to ask
		want     permission.Behavior
		by       permission.Layer
	}{
		{mode: permission.ModeAuto, approver: &countingApprover{ans: permission.ApprovalDecision{Behavior: permission.Allow}}, want: permission.Allow, by: permission.LayerUser},
		{mode: permission.ModeAuto, want: permission.Deny, by: permission.LayerMode},
		{mode: permission.ModeBypassPermissions, approver: &countingApprover{ans: permission.ApprovalDecision{Behavior: permission.Deny}}, want: permission.Deny, by: permission.LayerUser},
		{mode: permission.ModeBypassPermissions, want: permission.Deny, by: permission.LayerMode},
		{mode: permission.ModeDontAsk, approver: &countingApprover{ans: permission.ApprovalDecision{Behavior: permission.Allow}}, want: permission.Deny, by: permission.LayerMode},
	}
	for _, c := range cases {
		classifier := &countingClassifier{b: permission.Allow}
		g := l.gate(c.mode, rules, allowHook)
		ask := g.Decide(context.Background(), deploy)
		var approver permission.Approver
		if c.approver != nil {
			approver = c.approver
		}
		d := g.Answer(context.Background(), deploy, ask, approver, classifier, nil)
		if d.Behavior != c.want || d.DecidedBy != c.by {
			t.Errorf("%s, approver %v: %s by %s (%s), want %s by %s", c.mode, c.approver != nil, d.Behavior, d.DecidedBy, d.Reason, c.want, c.by)
		}
		if classifier.calls.Load() != 0 {
			t.Errorf("%s: the classifier was asked", c.mode)
		}
		if c.approver != nil && c.mode != permission.ModeDontAsk && c.approver.calls.Load() != 1 {
			t.Errorf("%s: the approver was asked %d times, want once", c.mode, c.approver.calls.Load())
		}
		if d.Behavior == permission.Deny && c.by == permission.LayerMode && !strings.Contains(d.Reason, "Only a person can approve") {
			t.Errorf("%s: the refusal %q does not say only a person can approve it", c.mode, d.Reason)
		}
	}
}

// The passthrough seat: an allow nobody stated meets the mode's unstated question, put
// with the tool's own sentence when it declares one; an allow rule or bypassPermissions
// states the allow.
func TestPassthroughSeat(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	ticket := permission.Call{Tool: "ticket", DeclaredBy: permission.DeclaredByCaller, Effect: tools.EffectWrite, Passthrough: true,
		PassthroughQuestion: "File a ticket in the tracker?", Scope: l.scope}
	plain := ticket
	plain.PassthroughQuestion = ""
	for _, c := range []struct {
		call  permission.Call
		mode  permission.Mode
		rules permission.RuleSet
		want  string
		says  string
	}{
		{call: ticket, mode: permission.ModeDefault, want: "ask", says: "File a ticket in the tracker?"},
		{call: plain, mode: permission.ModeDefault, want: "ask", says: UnstatedAskMessage("ticket")},
		{call: ticket, mode: permission.ModeAcceptEdits, want: "ask", says: "File a ticket in the tracker?"},
		{call: ticket, mode: permission.ModeDefault, rules: mustRules(t, []string{"ticket"}, nil, nil), want: "allow"},
		{call: ticket, mode: permission.ModeBypassPermissions, want: "allow"},
	} {
		d := l.gate(c.mode, c.rules).Decide(context.Background(), c.call)
		if got := verdict(d); got != c.want || c.says != "" && d.Reason != c.says {
			t.Errorf("%s under %s = %s (%q), want %s (%q)", c.call.Tool, c.mode, got, d.Reason, c.want, c.says)
		}
	}
}

// A read-only claim ranks below a declared effect: it spares a call plan mode's question
// only where nobody declared the effect, and it never earns the mode's own allow of a
// read tool (a passthrough tool claiming to read is still the unstated question).
func TestReadOnlyHintRanksBelowADeclaredEffect(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	call := func(effect tools.Effect, defaulted, hint, passthrough bool) permission.Call {
		return permission.Call{Tool: "lookup", DeclaredBy: permission.DeclaredByCaller, Effect: effect, EffectDefaulted: defaulted,
			ReadOnlyHint: hint, Passthrough: passthrough, Scope: l.scope}
	}
	rows := []struct {
		name string
		call permission.Call
		want [6]string // default, acceptEdits, plan, auto, dontAsk, bypassPermissions
	}{
		{"claim, no effect declared", call(tools.EffectExec, true, true, false), [6]string{"allow", "allow", "allow", "allow", "allow", "allow"}},
		{"no claim, no effect declared", call(tools.EffectExec, true, false, false), [6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"claim under a declared exec", call(tools.EffectExec, false, true, false), [6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"claim under a declared write", call(tools.EffectWrite, false, true, false), [6]string{"allow", "allow", "ask!", "allow", "allow", "allow"}},
		{"claim, passthrough", call(tools.EffectExec, true, true, true), [6]string{"ask", "ask", "ask", "ask", "ask", "allow"}},
		{"declared read, passthrough", call(tools.EffectRead, false, false, true), [6]string{"ask", "ask", "ask", "ask", "ask", "allow"}},
	}
	for _, row := range rows {
		for i, m := range matrixModes {
			d := l.gate(m, permission.RuleSet{}).Decide(context.Background(), row.call)
			if got := verdict(d); got != row.want[i] {
				t.Errorf("%s under %s = %s (%s: %s), want %s", row.name, m, got, d.DecidedBy, d.Reason, row.want[i])
			}
		}
	}
}
