// Package permreport assembles the permission report a check prints: every rule read
// with the seat it came from, the ones that name a call, and the gate's call for a
// checked one as a run would seat it, with what the check had to assume. It reads no
// settings and builds no gate: the caller hands it the parsed seats and the gate's
// matching rules.
package permreport

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/settings"
	"github.com/sema-agent/sema/tools"
)

// The seats of a rule; agent's RuleOrigin values are the same strings.
const (
	OriginSettings       = "settings"
	OriginTaskAllowed    = "task_allowed"
	OriginTaskDisallowed = "task_disallowed"
	OriginTaskAsk        = "task_ask"
	OriginPolicy         = "policy"
)

// Source is one rule with its seat, and whether it applies (agent.RuleSource).
type Source struct {
	Rule     string
	Behavior permission.Behavior
	Origin   string
	Path     string
	Layer    settings.Layer
	Applied  bool
}

// Seats are the rules a run reads, by seat.
type Seats struct {
	// Policy is the deployment's rules.
	Policy permission.RuleSet
	// Allowed, Disallowed and Ask are the task's lists.
	Allowed, Disallowed, Ask permission.RuleSet
	// Settings are the settings files read, lowest layer first.
	Settings []settings.Applied
}

// Sources lists every rule with its seat — the deployment's policy, the task's lists,
// then each settings file's — deny first, then ask, then allow, each list in that
// order.
func Sources(s Seats) []Source {
	var out []Source
	add := func(rs permission.RuleSet, origin string) {
		for _, x := range byBehavior(rs) {
			for _, r := range x.rules {
				out = append(out, Source{Rule: r.String(), Behavior: x.b, Origin: origin, Applied: true})
			}
		}
	}
	add(s.Policy, OriginPolicy)
	add(s.Allowed, OriginTaskAllowed)
	add(s.Disallowed, OriginTaskDisallowed)
	add(s.Ask, OriginTaskAsk)
	for _, a := range s.Settings {
		for _, r := range a.Rules {
			out = append(out, Source{Rule: r.Rule, Behavior: r.Behavior, Origin: OriginSettings, Path: a.Path, Layer: a.Layer, Applied: r.Applied})
		}
	}
	order := map[permission.Behavior]int{permission.Deny: 0, permission.Ask: 1, permission.Allow: 2}
	slices.SortStableFunc(out, func(a, b Source) int { return order[a.Behavior] - order[b.Behavior] })
	return out
}

type behaviorRules struct {
	b     permission.Behavior
	rules []permission.Rule
}

func byBehavior(rs permission.RuleSet) []behaviorRules {
	return []behaviorRules{{permission.Deny, rs.Deny}, {permission.Ask, rs.Ask}, {permission.Allow, rs.Allow}}
}

// NotApplied parses the rules read and left out (an untrusted workspace's allow rules),
// for a gate that asks which of them would have named a call.
func NotApplied(all []Source) ([]permission.Rule, error) {
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
	return left, nil
}

// Named are the sources of the matching rules, those that applied or those that did
// not.
func Named(all []Source, matching permission.RuleSet, applied bool) []Source {
	named := map[string]bool{}
	for _, x := range byBehavior(matching) {
		for _, r := range x.rules {
			named[string(x.b)+" "+r.String()] = true
		}
	}
	var out []Source
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

// CheckedCall is the gate's call for a checked one, as a run would seat it, and what
// the check had to assume.
func CheckedCall(tool string, input json.RawMessage) (permission.Call, []string) {
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	pc := permission.Call{Tool: tool, Input: input}
	var assumed []string
	switch e, known := engineEffects[tool]; {
	case known:
		pc.Effect = e
	case tool == "WebFetch" || tool == "WebSearch":
		pc.Effect, pc.Passthrough = tools.EffectRead, true
	case strings.HasPrefix(tool, "mcp__"):
		pc.Effect, pc.EffectDefaulted, pc.DeclaredBy = tools.EffectExec, true, permission.DeclaredByMCP
		assumed = append(assumed, "the server was not started, so its readOnlyHint is unknown: the tool is judged as one that may write")
	default:
		pc.Effect, pc.EffectDefaulted = tools.EffectExec, true
		assumed = append(assumed, tool+" is not one of sema's tools: it is judged as one that may write")
	}
	if tool == "Bash" {
		assumed = append(assumed, "commands are judged as if the sandbox did not confine them; with it, a write outside the roots is the kernel's to refuse rather than a question")
	}
	return pc, assumed
}

// Unrun is what a check assumes of the seats it does not run: the PreToolUse hooks it
// counted, and auto mode's classifier.
func Unrun(preToolUseHooks int, mode permission.Mode) []string {
	var assumed []string
	if preToolUseHooks > 0 {
		assumed = append(assumed, "the PreToolUse hooks were not run; a run asks them after the deny rules, and a hook may deny, ask or allow")
	}
	if mode == permission.ModeAuto {
		assumed = append(assumed, "in auto mode a question goes to the classifier, which a check does not run")
	}
	return assumed
}
