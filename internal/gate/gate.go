package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/rulematch"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// ModeSource is where the gate reads the leg's mode, live, on every call.
// *ModeController is one.
type ModeSource interface {
	Current() permission.Mode
}

// FixedMode is a ModeSource that always answers its own word (tests, one-shot tools).
type FixedMode permission.Mode

// Current returns m.
func (m FixedMode) Current() permission.Mode { return permission.Mode(m) }

// Config configures a Gate.
type Config struct {
	// Modes is read on every call; required.
	Modes ModeSource
	// Rules are the merged rules of every layer (flags, task, deployment, settings).
	Rules permission.RuleSet
	// Hooks are the PreToolUse hooks, run in order.
	Hooks []permission.Hook
	// Resolver resolves the shell targets of a Bash call and the paths of a rewritten
	// input. Without one no shell target can be placed: every shell write or read of a
	// file is a finding and no Bash call is answered by a mode.
	Resolver Resolver
	// ReadOnlyAllow overrides the shell read-only allowlist (nil: the built-in one).
	ReadOnlyAllow []string
	// Sandboxed reports that the kernel confines every shell command of the leg to the
	// write roots (package sandbox). A command's write outside them is then no question
	// for a person: the kernel refuses it whatever the answer. Default false.
	Sandboxed bool
}

// Gate is the permission fold of one leg. It holds no per-call state and is safe for
// concurrent use.
type Gate struct {
	modes ModeSource
	// set is the configured rules, as Rules returns them; rules is their compiled form,
	// which every station matches with.
	set      permission.RuleSet
	rules    compiledRules
	hooks    []permission.Hook
	resolver Resolver
	roAllow  []string
	// sandboxed: the kernel confines the leg's commands (Config.Sandboxed).
	sandboxed bool
	// bashDeny reports that some deny rule names Bash (with or without a specifier), so
	// a command that cannot be analyzed is refused rather than asked about.
	bashDeny bool
	// globs caches the path rules' patterns for the leg's root and home.
	globs atomic.Pointer[globCache]
	// roMemo remembers single-command read-only verdicts (text → bool); roMemoN counts
	// its entries.
	roMemo  sync.Map
	roMemoN atomic.Int64
}

// CodeConfig refuses a Config without a mode source.
const CodeConfig = "config.permission_gate_invalid"

// New builds a leg's gate.
func New(cfg Config) (*Gate, error) {
	if cfg.Modes == nil {
		return nil, sema.Errorf(CodeConfig, "the permission gate needs a mode source (Config.Modes)")
	}
	g := &Gate{modes: cfg.Modes, set: cfg.Rules.Merge(), hooks: append([]permission.Hook(nil), cfg.Hooks...), resolver: cfg.Resolver, roAllow: cfg.ReadOnlyAllow, sandboxed: cfg.Sandboxed}
	var err error
	if g.rules, err = compileRules(g.set); err != nil {
		return nil, err
	}
	for _, r := range g.rules.Deny {
		if r.Tool == "Bash" {
			g.bashDeny = true
		}
	}
	return g, nil
}

// Rules returns the gate's rules.
func (g *Gate) Rules() permission.RuleSet { return g.set.Merge() }

// compiledRules is a RuleSet compiled for matching, in the same order.
type compiledRules struct {
	Allow, Deny, Ask []rulematch.Rule
}

// compileRules compiles every rule of s from its text. A permission.Rule holds only its
// text, and ParseRule compiled that text once already, so a rule ParseRule built compiles
// to what ParseRule read; one built by hand that does not parse is refused as ParseRule
// would refuse it, rather than matched as something it does not say.
func compileRules(s permission.RuleSet) (compiledRules, error) {
	var out compiledRules
	for _, l := range []struct {
		in  []permission.Rule
		out *[]rulematch.Rule
	}{{s.Allow, &out.Allow}, {s.Deny, &out.Deny}, {s.Ask, &out.Ask}} {
		*l.out = make([]rulematch.Rule, 0, len(l.in))
		for _, r := range l.in {
			c, err := rulematch.Parse(r.String())
			if err != nil {
				if _, coded := permission.ParseRule(r.String()); coded != nil {
					return compiledRules{}, coded
				}
				return compiledRules{}, err
			}
			*l.out = append(*l.out, c)
		}
	}
	return out, nil
}

// fold is the state of one Decide.
type fold struct {
	call   permission.Call
	mode   permission.Mode
	policy ModePolicy
	// updated is the hook's rewrite of the input, carried on every later decision.
	updated json.RawMessage
	shell   *shellFacts
}

// decide is the one exit of the fold: every station's decision leaves through it. That
// makes it the place where a tool requiring a person for every call is held to it —
// whichever station answered, an allow or a question becomes a person-only question,
// and only a deny passes unchanged.
func (f *fold) decide(d permission.Decision) permission.Decision {
	if f.call.RequiresUserInteraction && d.Behavior != permission.Deny {
		d = personRequired(&f.call, d)
	}
	if d.Behavior != permission.Deny && f.updated != nil {
		d.UpdatedInput = f.updated
	}
	if d.Behavior == permission.Ask && d.Gate == "" {
		d.Gate = permission.GateToolPermission
	}
	return d
}

// personRequired turns d — an allow or a question of any station — into the question a
// tool that requires a person's approval for every call puts. A question keeps who
// raised it and its sentence, after the requirement's; an allow becomes the tool's own
// question. Either way no rule, hook, mode or classifier may answer it.
func personRequired(c *permission.Call, d permission.Decision) permission.Decision {
	reason := RequiresUserInteractionMessage(c.Tool)
	if d.Behavior == permission.Ask {
		if d.Reason != "" {
			reason += " " + d.Reason
		}
		d.Reason, d.PersonOnly = reason, true
		return d
	}
	return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerTool, PersonOnly: true, Reason: reason}
}

// RequiresUserInteractionMessage is the sentence of the question put for every call of
// a tool that requires a person's approval for each of them.
func RequiresUserInteractionMessage(tool string) string {
	return fmt.Sprintf("%s requires a person's approval for every call.", tool)
}

// Decide folds the layers of the leg's permissions into one decision for call, in
// this order; the first station that decides ends it:
//
//  1. deny rules (every mode), and a shell command touching the deny set;
//  2. PreToolUse hooks: deny → deny; ask → ask; allow (with its rewrite) is remembered;
//  3. ask rules;
//  4. the plan gate (plan mode): a person-only question, Reason mode;
//  5. the safety stations: the delete guard in every mode; outside bypassPermissions
//     protected paths and write- and read-boundary findings: person-only questions;
//  6. a hook's allow, then allow rules;
//  7. the mode's own answer (bypassPermissions; acceptEdits' writes and file commands;
//     a read-only tool or a shell command proven read-only in every mode);
//  8. the ordinary question: a covered write, a shell command, an unstated call; else
//     allow.
//
// For a call whose tool requires a person for every call (RequiresUserInteraction),
// whatever a station answers other than a deny becomes a person-only question.
//
// The mode is read once, live, at the start of the call.
func (g *Gate) Decide(ctx context.Context, call permission.Call) permission.Decision {
	f := &fold{call: call}
	f.mode = g.modes.Current()
	f.policy = ModePolicyOf(f.mode)
	// The input is the authority: a Bash command is always read from it, and the fields
	// a caller did not prepare are filled from it, so a rule never misses a call because
	// its caller skipped Prepare.
	if len(call.Input) > 0 && (call.Tool == "Bash" || call.Tool == "WebFetch" && call.URL == "" || pathFields[call.Tool] != "" && call.Paths == nil) {
		prepared, err := g.rederive(ctx, call, call.Input)
		if err != nil {
			return f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerTool, Reason: "The call cannot be judged: " + errMessage(err) + "."})
		}
		f.call = prepared
	}

	// 1. Deny rules.
	if d, ok := g.denyStation(ctx, f); ok {
		return d
	}
	// 2. Hooks.
	hookAllow, d, ok := g.hookStation(ctx, f)
	if ok {
		return d
	}
	// 3. Ask rules.
	for i := range g.rules.Ask {
		r := &g.rules.Ask[i]
		if g.matchesRestrictive(ctx, f, r) {
			return f.decide(permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerRule, Rule: r.String(),
				Reason: fmt.Sprintf("The rule %s asks before %s.", r.String(), describe(&f.call))})
		}
	}
	// An ask rule on a command cannot be checked against a program the text does not
	// show: the command is asked about as if the rule named it.
	if r := firstCommandRule(g.rules.Ask); r != nil && f.call.Tool == "Bash" {
		if why := g.hiddenCommand(ctx, f); why != "" {
			return f.decide(permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerRule, Rule: r.String(),
				Reason: fmt.Sprintf("The command may run a program its text does not show (%s), and the rule %s asks before such commands.", why, r.String())})
		}
	}
	// 4. The plan gate.
	if d, ok := planStation(f); ok {
		return f.decide(d)
	}
	// 5. Safety stations.
	if d, ok := g.safetyStation(ctx, f); ok {
		return f.decide(d)
	}
	// 6. A hook's allow, then allow rules.
	if hookAllow != nil {
		return f.decide(*hookAllow)
	}
	if d, ok := g.allowStation(ctx, f); ok {
		return f.decide(d)
	}
	// 7. The mode's own answer.
	if d, ok := g.modeStation(ctx, f); ok {
		return f.decide(d)
	}
	// 8. The ordinary question.
	return f.decide(g.ordinaryQuestion(f))
}

// denyStation is station 1.
func (g *Gate) denyStation(ctx context.Context, f *fold) (permission.Decision, bool) {
	for i := range g.rules.Deny {
		r := &g.rules.Deny[i]
		if g.matchesRestrictive(ctx, f, r) {
			return f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerRule, Rule: r.String(),
				Reason: fmt.Sprintf("Permission to use %s has been denied by the rule %s.", f.call.Tool, r.String())}), true
		}
	}
	if f.call.Tool == "Bash" {
		if d, ok := g.shellDenyStation(ctx, f); ok {
			return f.decide(d), true
		}
	}
	return permission.Decision{}, false
}

// hookStation is station 2. It returns the remembered allow, or a final decision.
func (g *Gate) hookStation(ctx context.Context, f *fold) (*permission.Decision, permission.Decision, bool) {
	var allow *permission.Decision
	var ask *permission.Decision
	for i, h := range g.hooks {
		hd, err := runHook(ctx, h, f.call)
		if err != nil {
			return nil, f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerHook,
				Reason: fmt.Sprintf("A PreToolUse hook failed (%v), so the call was refused.", err)}), true
		}
		switch hd.Behavior {
		case "", permission.Allow:
		case permission.Deny:
			msg := "A PreToolUse hook denied the call."
			if hd.Reason != "" {
				msg = "A PreToolUse hook denied the call: " + hd.Reason
			}
			return nil, f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerHook, Reason: msg}), true
		case permission.Ask:
			if ask == nil {
				msg := "A PreToolUse hook asks before " + describe(&f.call) + "."
				if hd.Reason != "" {
					msg = "A PreToolUse hook asks: " + hd.Reason
				}
				ask = &permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerHook, Reason: msg}
			}
		default:
			return nil, f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerHook,
				Reason: fmt.Sprintf("PreToolUse hook %d answered %q, which is not allow, deny or ask, so the call was refused.", i+1, hd.Behavior)}), true
		}
		if len(hd.UpdatedInput) > 0 {
			if !json.Valid(hd.UpdatedInput) {
				return nil, f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerHook,
					Reason: "A PreToolUse hook rewrote the input into invalid JSON, so the call was refused."}), true
			}
			next, err := g.rederive(ctx, f.call, hd.UpdatedInput)
			if err != nil {
				return nil, f.decide(permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerHook,
					Reason: "A PreToolUse hook rewrote the input, and the rewrite cannot be judged: " + err.Error() + "."}), true
			}
			f.call, f.shell = next, nil
			f.updated = append(json.RawMessage(nil), hd.UpdatedInput...)
			// A hook never overrides rules: the rewrite meets the deny rules again.
			if d, ok := g.denyStation(ctx, f); ok {
				return nil, d, true
			}
		}
		if hd.Behavior == permission.Allow {
			msg := "A PreToolUse hook allowed the call."
			if hd.Reason != "" {
				msg = "A PreToolUse hook allowed the call: " + hd.Reason
			}
			allow = &permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerHook, Reason: msg}
		}
	}
	if ask != nil {
		return nil, f.decide(*ask), true
	}
	return allow, permission.Decision{}, false
}

// runHook runs one hook with its panic contained.
func runHook(ctx context.Context, h permission.Hook, call permission.Call) (d permission.HookDecision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("it panicked: %v", p)
		}
	}()
	return h(ctx, call)
}

// planStation is station 4: under plan, ExitPlanMode is the plan review, and every
// covered write outside the exempt directories and every call to a non-engine tool
// that is not read-only is the mode's own question.
func planStation(f *fold) (permission.Decision, bool) {
	if f.policy.WriteGate != WriteGatePlan {
		return permission.Decision{}, false
	}
	c := &f.call
	if c.Tool == "ExitPlanMode" && c.DeclaredBy == permission.DeclaredByEngine {
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, PersonOnly: true, Gate: permission.GatePlanReview,
			Reason: "The plan is ready for review: approve it to leave plan mode and carry it out."}, true
	}
	if d, ok := ModeWriteGate(f.mode, c); ok && d.Behavior == permission.Ask {
		return d, true
	}
	if c.DeclaredBy != permission.DeclaredByEngine && !declaredReadOnly(c) {
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, PersonOnly: true,
			Reason: fmt.Sprintf("Plan mode is on: %s is not read-only, so it runs only if a person approves it before the plan is accepted.", describe(c))}, true
	}
	return permission.Decision{}, false
}

// declaredReadOnly reports a tool read-only by its declared effect, or — only where
// nobody declared one — by its MCP server's readOnlyHint.
func declaredReadOnly(c *permission.Call) bool {
	if c.EffectDefaulted {
		return c.ReadOnlyHint
	}
	return c.Effect == tools.EffectRead
}

// safetyStation is station 5.
func (g *Gate) safetyStation(ctx context.Context, f *fold) (permission.Decision, bool) {
	c := &f.call
	if c.Tool == "Bash" {
		return g.shellSafetyStation(ctx, f)
	}
	if f.mode == permission.ModeBypassPermissions {
		return permission.Decision{}, false
	}
	if rulematch.IsEditTool(c.Tool) || c.Effect == tools.EffectWrite {
		for _, t := range c.Paths {
			if t.Canonical == "" {
				return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerSafety, PersonOnly: true,
					Reason: fmt.Sprintf("%s names %s, which cannot be resolved safely; only a person can approve this write.", c.Tool, t.Abs)}, true
			}
			if t.Protected {
				why := t.ProtectedReason
				if why == "" {
					why = "it is in the protected set"
				}
				return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerSafety, PersonOnly: true,
					Reason: fmt.Sprintf("%s would write the protected path %s (%s); only a person can approve it.", c.Tool, t.Canonical, why)}, true
			}
		}
	}
	return permission.Decision{}, false
}

// allowStation is station 6's second half: allow rules.
func (g *Gate) allowStation(ctx context.Context, f *fold) (permission.Decision, bool) {
	c := &f.call
	if c.Tool == "Bash" {
		if r, ok := g.shellAllowed(ctx, f); ok {
			return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerRule, Rule: r,
				Reason: fmt.Sprintf("The rule %s allows %s.", r, describe(c))}, true
		}
		return permission.Decision{}, false
	}
	for i := range g.rules.Allow {
		r := &g.rules.Allow[i]
		if g.matchesPermissive(c, r) {
			return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerRule, Rule: r.String(),
				Reason: fmt.Sprintf("The rule %s allows %s.", r.String(), describe(c))}, true
		}
	}
	return permission.Decision{}, false
}

// modeStation is station 7.
func (g *Gate) modeStation(ctx context.Context, f *fold) (permission.Decision, bool) {
	c := &f.call
	if f.mode == permission.ModeBypassPermissions {
		return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerMode, Reason: "bypassPermissions mode allows the call."}, true
	}
	if rulematch.IsEditTool(c.Tool) {
		if d, ok := ModeWriteGate(f.mode, c); ok && d.Behavior == permission.Allow {
			return d, true
		}
		return permission.Decision{}, false
	}
	if c.Tool == "Bash" {
		if f.policy.WriteGate == WriteGateAcceptRoot && g.shellAccepted(ctx, f) {
			return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerMode,
				Reason: "acceptEdits mode allows the file command: every target is inside the write roots."}, true
		}
		if g.shellReadOnly(ctx, f) {
			return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerTool, Reason: "The command is read-only and reads only inside the read roots."}, true
		}
		return permission.Decision{}, false
	}
	if !isPassthrough(c) && !c.EffectDefaulted && c.Effect == tools.EffectRead {
		return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerTool, Reason: "The tool is read-only."}, true
	}
	return permission.Decision{}, false
}

func isPassthrough(c *permission.Call) bool {
	p, _ := seatOf(c)
	return p || c.DeclaredBy == permission.DeclaredByMCP
}

// seatOf is the one reading of a call's permission seat, taken on the input being
// judged: the per-call reader where the tool's seat depends on its arguments, else the
// tool's static seat. A reader that panics reads as passthrough, the stricter seat.
func seatOf(c *permission.Call) (passthrough bool, question string) {
	if c.SeatOf == nil {
		return c.Passthrough, c.PassthroughQuestion
	}
	defer func() {
		if recover() != nil {
			passthrough, question = true, ""
		}
	}()
	return c.SeatOf(c.Input)
}

// ordinaryQuestion is station 8.
func (g *Gate) ordinaryQuestion(f *fold) permission.Decision {
	c := &f.call
	switch {
	case rulematch.IsEditTool(c.Tool):
		d, _ := ModeWriteGate(f.mode, c)
		if d.Behavior == "" {
			d = permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, Reason: fmt.Sprintf("Allow %s?", describe(c))}
		}
		return d
	case c.Tool == "Bash":
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerTool,
			Reason: fmt.Sprintf("The command %s is not proven read-only; approve it to run it.", quoteCommand(c.Command))}
	case isPassthrough(c) && f.policy.Unstated == UnstatedAsk:
		_, msg := seatOf(c)
		if msg == "" {
			msg = UnstatedAskMessage(c.Tool)
		}
		return permission.Decision{Behavior: permission.Ask, DecidedBy: permission.LayerMode, Reason: msg}
	}
	return permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerTool, Reason: "The tool answers for its own calls."}
}

// UnstatedAskMessage is the question put for a call to a tool that states no permission
// of its own.
func UnstatedAskMessage(tool string) string {
	return fmt.Sprintf("The tool %s states no permission of its own; allow this call?", tool)
}

// matchesRestrictive reports whether a deny or ask rule names the call.
func (g *Gate) matchesRestrictive(ctx context.Context, f *fold, r *rulematch.Rule) bool {
	c := &f.call
	switch r.Kind {
	case rulematch.KindTool, rulematch.KindServer:
		return r.CoversTool(c.Tool, false)
	case rulematch.KindPath:
		if c.Tool == "Bash" && (r.Tool == "Read" || r.Tool == "Edit") {
			return g.shellPathRuleMatches(ctx, f, r)
		}
		return r.CoversTool(c.Tool, true) && g.targetsNamedRestrictive(r, c.Paths, scopeRoot(&c.Scope), c.Home)
	case rulematch.KindBashPrefix, rulematch.KindBashExact:
		return c.Tool == "Bash" && g.shellRuleMatches(ctx, f, r)
	case rulematch.KindDomain:
		if c.Tool != r.Tool {
			return false
		}
		m, parsed := r.DomainMatches(c.URL)
		// An url no rule can read is named by every restrictive domain rule.
		return m || !parsed
	}
	return false
}

// matchesPermissive reports whether an allow rule (other than a Bash command rule) names
// the call.
func (g *Gate) matchesPermissive(c *permission.Call, r *rulematch.Rule) bool {
	switch r.Kind {
	case rulematch.KindTool, rulematch.KindServer:
		return r.CoversTool(c.Tool, false)
	case rulematch.KindPath:
		return r.CoversTool(c.Tool, false) && g.targetsNamedPermissive(r, c.Paths, scopeRoot(&c.Scope), c.Home)
	case rulematch.KindDomain:
		if c.Tool != r.Tool {
			return false
		}
		m, _ := r.DomainMatches(c.URL)
		return m
	}
	return false
}

// describe names a call in a sentence.
func describe(c *permission.Call) string {
	switch {
	case c.Tool == "Bash":
		return "running " + quoteCommand(c.Command)
	case len(c.Paths) > 0:
		p := c.Paths[0].Canonical
		if p == "" {
			p = c.Paths[0].Abs
		}
		return c.Tool + " on " + p
	}
	return "using " + c.Tool
}

// quoteCommand shows a command in a sentence, shortened to 200 bytes.
func quoteCommand(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if len(cmd) > 200 {
		cmd = cmd[:200] + "…"
	}
	return "`" + cmd + "`"
}

// errMessage is the sentence of a *sema.Error, else the error's text.
func errMessage(err error) string {
	var se *sema.Error
	if errors.As(err, &se) {
		return strings.TrimSuffix(se.Message, ".")
	}
	return err.Error()
}

// bashInput reads a Bash call's command and run_in_background.
func bashInput(in json.RawMessage) (string, bool, error) {
	var v struct {
		Command         string `json:"command"`
		RunInBackground bool   `json:"run_in_background"`
	}
	if err := json.Unmarshal(in, &v); err != nil {
		return "", false, err
	}
	return v.Command, v.RunInBackground, nil
}

// pathFields names the input member that holds a file tool's path.
var pathFields = map[string]string{
	"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
	"NotebookEdit": "notebook_path", "NotebookRead": "notebook_path",
	"Glob": "path", "Grep": "path", "LS": "path",
}

// Prepare fills the fields the gate reads from call.Input: Command and RunInBackground
// for Bash, URL for WebFetch, and Paths for the file tools (resolved through the
// gate's Resolver; a tool that names no path targets the task root). The caller may
// fill them itself instead; Decide reads a Bash command from Input whenever Input is
// set.
func (g *Gate) Prepare(ctx context.Context, call permission.Call) (permission.Call, error) {
	return g.rederive(ctx, call, call.Input)
}

func (g *Gate) rederive(ctx context.Context, call permission.Call, input json.RawMessage) (permission.Call, error) {
	call.Input = input
	switch {
	case call.Tool == "Bash":
		cmd, bg, err := bashInput(input)
		if err != nil {
			return call, sema.Errorf(permission.CodeInputUnjudgeable, "the Bash input is not valid JSON with a command: %v", err)
		}
		call.Command, call.RunInBackground = cmd, bg
	case call.Tool == "WebFetch":
		var v struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(input, &v); err != nil {
			return call, sema.Errorf(permission.CodeInputUnjudgeable, "the WebFetch input is not valid JSON with a url: %v", err)
		}
		call.URL = v.URL
	case pathFields[call.Tool] != "":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(input, &m); err != nil {
			return call, sema.Errorf(permission.CodeInputUnjudgeable, "the %s input is not a JSON object: %v", call.Tool, err)
		}
		spelled := ""
		if raw, ok := m[pathFields[call.Tool]]; ok {
			if err := json.Unmarshal(raw, &spelled); err != nil {
				return call, sema.Errorf(permission.CodeInputUnjudgeable, "the %s input's %s is not a string", call.Tool, pathFields[call.Tool])
			}
		}
		if spelled == "" && !rulematch.IsReadTool(call.Tool) {
			call.Paths = nil
			return call, nil
		}
		t, err := g.resolveTarget(ctx, &call.Scope, spelled, rulematch.IsEditTool(call.Tool))
		if err != nil {
			return call, err
		}
		call.Paths = []permission.PathTarget{t}
	}
	return call, nil
}

// resolveTarget resolves one spelled path (absolute, "~/…", or relative to the root).
// An unresolvable path is a target with no canonical spelling, not an error: the
// stations ask about it.
func (g *Gate) resolveTarget(ctx context.Context, s *permission.Scope, spelled string, write bool) (permission.PathTarget, error) {
	raw, ok := joinPath(s, spelled)
	if !ok {
		return permission.PathTarget{Abs: spelled}, nil
	}
	t := permission.PathTarget{Abs: filepath.Clean(raw)}
	if g.resolver == nil {
		return t, sema.Errorf(permission.CodeInputUnjudgeable, "the gate has no resolver to place %s", t.Abs)
	}
	// The resolver sees the path as spelled: "link/.." is the parent of the link's
	// target, not the directory holding the link.
	c, err := g.resolver.Canonicalize(ctx, raw)
	if err != nil {
		return t, nil
	}
	t.Canonical = c
	if write {
		t.Protected, t.ProtectedReason = g.resolver.IsProtected(c)
	}
	return t, nil
}

// joinPath makes a spelled path absolute without cleaning it: "~" and "~/x" against the
// home, a relative path against the root. "~user" cannot be placed.
func joinPath(s *permission.Scope, p string) (string, bool) {
	switch {
	case p == "":
		return scopeRoot(s), true
	case p == "~" || strings.HasPrefix(p, "~/"):
		if s.Home == "" {
			return "", false
		}
		return s.Home + "/" + p[1:], true
	case strings.HasPrefix(p, "~"):
		return "", false
	case strings.HasPrefix(p, "/"):
		return p, true
	}
	return scopeRoot(s) + "/" + p, true
}
