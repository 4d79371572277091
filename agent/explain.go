package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/internal/permreport"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/settings"
)

// RuleOrigin says which seat a permission rule came from.
type RuleOrigin string

// The seats of a rule.
const (
	// OriginSettings is a settings file (RuleSource.Path names it).
	OriginSettings RuleOrigin = "settings"
	// OriginTaskAllowed is the task's AllowedTools (the command line's --allowed-tools).
	OriginTaskAllowed RuleOrigin = "task_allowed"
	// OriginTaskDisallowed is the task's DisallowedTools (--disallowed-tools).
	OriginTaskDisallowed RuleOrigin = "task_disallowed"
	// OriginTaskAsk is the task's AskTools.
	OriginTaskAsk RuleOrigin = "task_ask"
	// OriginPolicy is the deployment's Policy.Rules.
	OriginPolicy RuleOrigin = "policy"
)

// RuleSource is one permission rule with where it came from and whether it applies.
type RuleSource struct {
	// Rule is the rule as written.
	Rule string `json:"rule"`
	// Behavior is its list: allow, deny or ask.
	Behavior permission.Behavior `json:"behavior"`
	// Origin is the seat it came from.
	Origin RuleOrigin `json:"origin"`
	// Path is the settings file, for OriginSettings ("" for an inline document).
	Path string `json:"path,omitempty"`
	// Layer is the settings file's layer, for OriginSettings.
	Layer settings.Layer `json:"layer,omitempty"`
	// Applied is false for a rule read and left out: an untrusted workspace's allow
	// rule.
	Applied bool `json:"applied"`
}

// PermissionReport is what a run of spec would apply of its permission rules, and for
// a call what the gate would answer (Runner.Permissions).
type PermissionReport struct {
	// Mode is the mode the run would start in.
	Mode permission.Mode `json:"mode"`
	// Rules are every rule read, deny first, then ask, then allow, each list in the
	// order the seats are read.
	Rules []RuleSource `json:"rules"`
	// Settings are the settings files read, lowest layer first.
	Settings []settings.Applied `json:"settings"`
	// PreToolUseHooks counts the PreToolUse hooks that would run before each call; a
	// check runs none of them.
	PreToolUseHooks int `json:"pre_tool_use_hooks"`
	// Notices are what reading the settings said (an untrusted workspace's file).
	Notices []sema.Notice `json:"notices,omitempty"`
	// Check is the answer for the call asked about; nil when none was.
	Check *PermissionCheck `json:"check,omitempty"`
}

// CheckedCall is a tool call to check: the tool's name and its input.
type CheckedCall struct {
	// Tool is the tool's name: "Bash", "Edit", "mcp__server__tool".
	Tool string
	// Input is the call's JSON input ({"command": "git push"}).
	Input json.RawMessage
}

// PermissionCheck is the gate's answer for one call, with the rules that named it.
type PermissionCheck struct {
	// Tool is the tool checked.
	Tool string `json:"tool"`
	// Input is the input checked.
	Input json.RawMessage `json:"input"`
	// Decision is what the gate would decide (before any hook, person or classifier).
	Decision permission.Decision `json:"decision"`
	// Matching are the rules that name the call, deny first, with their sources.
	Matching []RuleSource `json:"matching"`
	// NotApplied are the rules read and left out (an untrusted workspace's allow rules)
	// that would have named the call: what trusting the workspace would change.
	NotApplied []RuleSource `json:"not_applied,omitempty"`
	// Assumed says what the check could not know without running anything.
	Assumed []string `json:"assumed,omitempty"`
}

// Permissions reads the settings a run of spec would read and builds its permission
// gate — the rules, the mode, the roots — without starting a session, a model, a hook,
// an MCP server or a tool. With call it asks the gate about it. It backs `sema
// permissions` and `sema permissions check`: why was that allowed?
func (r *Runner) Permissions(ctx context.Context, spec TaskSpec, call *CheckedCall) (*PermissionReport, error) {
	if spec.PermissionMode != "" {
		if _, err := permission.ParseMode(string(spec.PermissionMode)); err != nil {
			return nil, err
		}
	}
	l := &leg{deps: &r.deps, spec: spec, emit: func(Event) {}, wake: make(chan struct{}, 1), askMu: new(sync.Mutex)}
	rules, defaultMode, err := l.rules(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.prepareModes(l.modeFor(nil, defaultMode), nil); err != nil {
		return nil, err
	}
	if err := l.prepareFence(ctx); err != nil {
		return nil, err
	}
	sources := l.ruleSources()
	rep := &PermissionReport{Mode: l.modes.Observed(), Rules: ruleSourcesOf(sources), Settings: l.layered.Applied, Notices: l.notices}
	for _, h := range l.layered.Hooks {
		if h.Event == hooks.PreToolUse {
			rep.PreToolUseHooks++
		}
	}
	rep.PreToolUseHooks += len(r.deps.hooks().PreToolUse)
	if call == nil {
		return rep, nil
	}
	scope, _ := gate.ScreenExemptDirs(gate.ScopeOf(ctx, l.fence, l.home()))
	// No hooks: a check runs nothing. They are counted in the report instead.
	g, err := gate.New(gate.Config{Modes: l.modes, Rules: rules, Resolver: gate.FenceResolver(l.fence), ReadOnlyAllow: r.deps.shell().ReadonlyAllow})
	if err != nil {
		return nil, err
	}
	pc, assumed := permreport.CheckedCall(call.Tool, call.Input)
	pc.Scope = scope
	if e, ok := l.declaredEffect(call.Tool); ok {
		pc.Effect, pc.EffectDefaulted = e, false
	}
	matching, err := g.Matching(ctx, pc)
	if err != nil {
		return nil, err
	}
	assumed = append(assumed, permreport.Unrun(rep.PreToolUseHooks, rep.Mode)...)
	notApplied, err := l.notAppliedMatching(ctx, sources, pc)
	if err != nil {
		return nil, err
	}
	rep.Check = &PermissionCheck{Tool: call.Tool, Input: pc.Input, Decision: g.Decide(ctx, pc), Matching: ruleSourcesOf(permreport.Named(sources, matching, true)),
		NotApplied: notApplied, Assumed: assumed}
	return rep, nil
}

// notAppliedMatching are the rules read and left out that would name pc.
func (l *leg) notAppliedMatching(ctx context.Context, all []permreport.Source, pc permission.Call) ([]RuleSource, error) {
	left, err := permreport.NotApplied(all)
	if err != nil || len(left) == 0 {
		return nil, err
	}
	g, err := gate.New(gate.Config{Modes: l.modes, Rules: permission.RuleSet{Allow: left}, Resolver: gate.FenceResolver(l.fence), ReadOnlyAllow: l.deps.shell().ReadonlyAllow})
	if err != nil {
		return nil, err
	}
	m, err := g.Matching(ctx, pc)
	if err != nil {
		return nil, err
	}
	return ruleSourcesOf(permreport.Named(all, m, false)), nil
}

// ruleSources lists the leg's rules with their seats: the deployment's policy, the
// task's lists, then each settings file's, lowest layer first.
func (l *leg) ruleSources() []permreport.Source {
	// The task's lists were parsed by rules(); a rule that did not parse refused there.
	allowed, _ := permission.ParseRules(splitRules(l.spec.AllowedTools), nil, nil)
	denied, _ := permission.ParseRules(nil, splitRules(l.spec.DisallowedTools), nil)
	ask, _ := permission.ParseRules(nil, nil, splitRules(l.spec.AskTools))
	return permreport.Sources(permreport.Seats{Policy: l.deps.policy().Rules, Allowed: allowed, Disallowed: denied, Ask: ask, Settings: l.layered.Applied})
}

// ruleSourcesOf are the report's sources as RuleSource (nil for none).
func ruleSourcesOf(in []permreport.Source) []RuleSource {
	if len(in) == 0 {
		return nil
	}
	out := make([]RuleSource, len(in))
	for i, s := range in {
		out[i] = RuleSource{Rule: s.Rule, Behavior: s.Behavior, Origin: RuleOrigin(s.Origin), Path: s.Path, Layer: s.Layer, Applied: s.Applied}
	}
	return out
}
