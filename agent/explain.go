package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/internal/gate"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/tools"
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
	rep := &PermissionReport{Mode: l.modes.Observed(), Rules: l.ruleSources(), Settings: l.layered.Applied, Notices: l.notices}
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
	pc, assumed := checkedCall(*call)
	pc.Scope = scope
	if e, ok := l.declaredEffect(call.Tool); ok {
		pc.Effect, pc.EffectDefaulted = e, false
	}
	matching, err := g.Matching(ctx, pc)
	if err != nil {
		return nil, err
	}
	if rep.PreToolUseHooks > 0 {
		assumed = append(assumed, "the PreToolUse hooks were not run; a run asks them after the deny rules, and a hook may deny, ask or allow")
	}
	if rep.Mode == permission.ModeAuto {
		assumed = append(assumed, "in auto mode a question goes to the classifier, which a check does not run")
	}
	notApplied, err := l.notAppliedMatching(ctx, rep.Rules, pc)
	if err != nil {
		return nil, err
	}
	rep.Check = &PermissionCheck{Tool: call.Tool, Input: pc.Input, Decision: g.Decide(ctx, pc), Matching: sourcesOf(rep.Rules, matching, true),
		NotApplied: notApplied, Assumed: assumed}
	return rep, nil
}

// notAppliedMatching are the rules read and left out that would name pc.
func (l *leg) notAppliedMatching(ctx context.Context, all []RuleSource, pc permission.Call) ([]RuleSource, error) {
	var left []permission.Rule
	for _, s := range all {
		if !s.Applied {
			r, err := permission.ParseRule(s.Rule)
			if err != nil {
				return nil, err
			}
			left = append(left, r)
		}
	}
	if len(left) == 0 {
		return nil, nil
	}
	g, err := gate.New(gate.Config{Modes: l.modes, Rules: permission.RuleSet{Allow: left}, Resolver: gate.FenceResolver(l.fence), ReadOnlyAllow: l.deps.shell().ReadonlyAllow})
	if err != nil {
		return nil, err
	}
	m, err := g.Matching(ctx, pc)
	if err != nil {
		return nil, err
	}
	return sourcesOf(all, m, false), nil
}

// ruleSources lists the leg's rules with their seats: the deployment's policy, the
// task's lists, then each settings file's, lowest layer first.
func (l *leg) ruleSources() []RuleSource {
	var out []RuleSource
	add := func(rs permission.RuleSet, origin RuleOrigin) {
		for _, x := range []struct {
			b     permission.Behavior
			rules []permission.Rule
		}{{permission.Deny, rs.Deny}, {permission.Ask, rs.Ask}, {permission.Allow, rs.Allow}} {
			for _, r := range x.rules {
				out = append(out, RuleSource{Rule: r.String(), Behavior: x.b, Origin: origin, Applied: true})
			}
		}
	}
	add(l.deps.policy().Rules, OriginPolicy)
	// The task's lists were parsed by rules(); a rule that did not parse refused there.
	allowed, _ := permission.ParseRules(splitRules(l.spec.AllowedTools), nil, nil)
	add(allowed, OriginTaskAllowed)
	denied, _ := permission.ParseRules(nil, splitRules(l.spec.DisallowedTools), nil)
	add(denied, OriginTaskDisallowed)
	ask, _ := permission.ParseRules(nil, nil, splitRules(l.spec.AskTools))
	add(ask, OriginTaskAsk)
	for _, a := range l.layered.Applied {
		for _, r := range a.Rules {
			out = append(out, RuleSource{Rule: r.Rule, Behavior: r.Behavior, Origin: OriginSettings, Path: a.Path, Layer: a.Layer, Applied: r.Applied})
		}
	}
	order := map[permission.Behavior]int{permission.Deny: 0, permission.Ask: 1, permission.Allow: 2}
	slices.SortStableFunc(out, func(a, b RuleSource) int { return order[a.Behavior] - order[b.Behavior] })
	return out
}

// sourcesOf are the sources of the matching rules, those that applied or those that
// did not.
func sourcesOf(all []RuleSource, matching permission.RuleSet, applied bool) []RuleSource {
	named := map[string]bool{}
	for _, x := range []struct {
		b     permission.Behavior
		rules []permission.Rule
	}{{permission.Deny, matching.Deny}, {permission.Ask, matching.Ask}, {permission.Allow, matching.Allow}} {
		for _, r := range x.rules {
			named[string(x.b)+" "+r.String()] = true
		}
	}
	var out []RuleSource
	for _, s := range all {
		if s.Applied == applied && named[string(s.Behavior)+" "+s.Rule] {
			out = append(out, s)
		}
	}
	return out
}

// engineEffects are the effects of the engine's own tools, as their specs declare
// them, for a check that mounts none.
var engineEffects = map[string]tools.Effect{
	"Read": tools.EffectRead, "Glob": tools.EffectRead, "Grep": tools.EffectRead, "LS": tools.EffectRead,
	"NotebookRead": tools.EffectRead, "BashOutput": tools.EffectRead,
	"Edit": tools.EffectWrite, "Write": tools.EffectWrite, "MultiEdit": tools.EffectWrite, "NotebookEdit": tools.EffectWrite,
	"Bash": tools.EffectExec, "KillShell": tools.EffectExec, "Task": tools.EffectExec, "TodoWrite": tools.EffectExec,
}

// checkedCall is the gate's call for a checked one, as a run would seat it, and what the
// check had to assume.
func checkedCall(c CheckedCall) (permission.Call, []string) {
	in := c.Input
	if len(in) == 0 {
		in = json.RawMessage(`{}`)
	}
	pc := permission.Call{Tool: c.Tool, Input: in}
	var assumed []string
	switch e, known := engineEffects[c.Tool]; {
	case known:
		pc.Effect = e
	case c.Tool == "WebFetch" || c.Tool == "WebSearch":
		pc.Effect, pc.Passthrough = tools.EffectRead, true
	case strings.HasPrefix(c.Tool, "mcp__"):
		pc.Effect, pc.EffectDefaulted, pc.DeclaredBy = tools.EffectExec, true, permission.DeclaredByMCP
		assumed = append(assumed, "the server was not started, so its readOnlyHint is unknown: the tool is judged as one that may write")
	default:
		pc.Effect, pc.EffectDefaulted = tools.EffectExec, true
		assumed = append(assumed, c.Tool+" is not one of sema's tools: it is judged as one that may write")
	}
	if c.Tool == "Bash" {
		assumed = append(assumed, "commands are judged as if the sandbox did not confine them; with it, a write outside the roots is the kernel's to refuse rather than a question")
	}
	return pc, assumed
}
