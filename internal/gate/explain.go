package gate

import (
	"context"

	"github.com/sema-agent/sema/permission"
)

// Matching returns the gate's rules that name call, list by list, as the stations match
// them: a deny or ask rule that names the call (any of a command's segments, any of its
// targets), an allow rule that alone covers it (every segment of a command). It
// decides nothing and runs no hook; `sema permissions check` shows it beside Decide's
// answer, so that a person sees every rule that had a say and not only the one that
// ended the fold. call is prepared as Decide prepares it.
func (g *Gate) Matching(ctx context.Context, call permission.Call) (permission.RuleSet, error) {
	var out permission.RuleSet
	f := &fold{call: call, mode: g.modes.Current()}
	f.policy = ModePolicyOf(f.mode)
	if len(call.Input) > 0 {
		prepared, err := g.rederive(ctx, call, call.Input)
		if err != nil {
			return out, err
		}
		f.call = prepared
	}
	for i := range g.rules.Deny {
		if g.matchesRestrictive(ctx, f, &g.rules.Deny[i]) {
			out.Deny = append(out.Deny, g.set.Deny[i])
		}
	}
	for i := range g.rules.Ask {
		if g.matchesRestrictive(ctx, f, &g.rules.Ask[i]) {
			out.Ask = append(out.Ask, g.set.Ask[i])
		}
	}
	for i, r := range g.set.Allow {
		// An allow rule is asked alone: for a command, whether it covers every segment.
		one, err := New(Config{Modes: g.modes, Rules: permission.RuleSet{Allow: []permission.Rule{r}}, Resolver: g.resolver, ReadOnlyAllow: g.roAllow, Sandboxed: g.sandboxed})
		if err != nil {
			return out, err
		}
		if _, ok := one.allowStation(ctx, f); ok {
			out.Allow = append(out.Allow, g.set.Allow[i])
		}
	}
	return out, nil
}
