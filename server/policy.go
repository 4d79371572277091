package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
)

// Refusals of a task by its tenant's policy, before it is queued.
const (
	// CodePolicyMode: a permission mode the tenant's policy does not allow
	// (bypassPermissions unless the operator allowed it).
	CodePolicyMode = "tenant.policy_mode"
	// CodePolicyModel: a model neither the operator's list (Config.Models) nor the
	// tenant's policy allows.
	CodePolicyModel = "tenant.policy_model"
	// CodePolicyMaxTurns: max_turns above the policy's.
	CodePolicyMaxTurns = "tenant.policy_max_turns"
	// CodePolicyBudget: max_budget_usd above the policy's.
	CodePolicyBudget = "tenant.policy_budget"
	// CodePolicyInvalid: a policy the operator set that cannot be applied.
	CodePolicyInvalid = "tenant.policy_invalid"
)

// Policy is what the operator lets one tenant's tasks do. Its zero value is the
// default: every permission mode but bypassPermissions, the operator's models, no
// rules of its own, the deployment's sandbox, no bounds beyond the tenant's limits.
// A task that asks for more than its policy allows is refused by name (tenant.policy_*)
// before it is queued; what a task cannot ask for (rules, sandbox, network, tokens)
// the policy sets on every leg.
type Policy struct {
	// PermissionModes are the modes a task may name. Empty: all but bypassPermissions,
	// which only a policy that lists it allows.
	PermissionModes []string `json:"permission_modes,omitempty"`
	// Models are the model words a task may name, among the operator's
	// (Config.Models: a word only the policy lists is still refused). Empty: all of the
	// operator's. The default model ("") is always
	// allowed: the operator chose it.
	Models []string `json:"models,omitempty"`
	// Deny and Ask are permission rules ("Bash(curl:*)", "Edit(secrets/**)") added to
	// every leg: deny wins over any allow the task sends.
	Deny []string `json:"deny,omitempty"`
	Ask  []string `json:"ask,omitempty"` // ask rules: a person (or the parked question) answers
	// Sandbox "required" runs every leg with the sandbox on: a machine that cannot
	// confine commands refuses to start the leg (sandbox.unavailable) rather than run it
	// unconfined. Empty: the deployment's word.
	Sandbox string `json:"sandbox,omitempty"`
	// Network "off" turns the sandbox's network off for every leg; "on" allows it.
	// Empty: the deployment's word.
	Network string `json:"network,omitempty"`
	// MaxTurns bounds the model responses of one leg: a task that names more is
	// refused, one that names none gets this bound. 0: none.
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxTokensPerTask bounds the tokens one leg may spend (the leg stops with
	// budget_exceeded). 0: none.
	MaxTokensPerTask int64 `json:"max_tokens_per_task,omitempty"`
	// MaxUSDPerTask bounds what one leg may cost: a task that names more is refused,
	// one that names none gets this budget. 0: none.
	MaxUSDPerTask float64 `json:"max_usd_per_task,omitempty"`
}

// ParsePolicy reads a policy in its file form (JSON with the fields above, no others)
// and checks it.
func ParsePolicy(data []byte) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, sema.Errorf(CodePolicyInvalid, "the policy is not the policy's JSON: %v", err)
	}
	if dec.More() {
		return Policy{}, sema.Errorf(CodePolicyInvalid, "the policy holds more than one JSON value; give one object")
	}
	return p, p.check()
}

// check refuses a policy that cannot be applied, naming the field.
func (p Policy) check() error {
	bad := func(field, format string, args ...any) error {
		return sema.Errorf(CodePolicyInvalid, "policy field %s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
	}
	for _, m := range p.PermissionModes {
		if _, err := permission.ParseMode(m); err != nil || m == "" {
			return bad("permission_modes", "unknown mode %q; the modes are default, acceptEdits, plan, auto, dontAsk, bypassPermissions", m)
		}
	}
	if _, err := permission.ParseRules(nil, p.Deny, p.Ask); err != nil {
		return bad("deny/ask", "%s", sema.MessageOf(err))
	}
	switch p.Sandbox {
	case "", "required":
	default:
		return bad("sandbox", "%q is not a sandbox policy; give required, or leave it out for the deployment's", p.Sandbox)
	}
	switch p.Network {
	case "", "on", "off":
	default:
		return bad("network", "%q is not on or off", p.Network)
	}
	if p.MaxTurns < 0 || p.MaxTokensPerTask < 0 {
		return bad("max_turns/max_tokens_per_task", "cannot be negative")
	}
	if p.MaxUSDPerTask < 0 || math.IsNaN(p.MaxUSDPerTask) || math.IsInf(p.MaxUSDPerTask, 0) {
		return bad("max_usd_per_task", "must be a non-negative number")
	}
	return nil
}

// SetPolicy sets tenant name's policy: it applies to the tasks submitted from now on,
// and to every leg that starts from now on (its rules, sandbox, network and bounds).
func (s *Server) SetPolicy(ctx context.Context, name string, p Policy) error {
	if err := p.check(); err != nil {
		return err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		if err := tenantExists(ctx, c, name); err != nil {
			return err
		}
		n64, err := c.exec(ctx, `UPDATE sema_serve_policies SET policy = ? WHERE tenant = ?`, string(data), name)
		if err != nil || n64 > 0 {
			return err
		}
		_, err = c.exec(ctx, `INSERT INTO sema_serve_policies (tenant, policy) VALUES (?, ?)`, name, string(data))
		return err
	})
}

// SetLimits changes tenant name's concurrency limit and daily tokens (nil: unchanged;
// zero: none) without minting a token. The next submission and the next leg see them.
func (s *Server) SetLimits(ctx context.Context, name string, maxConcurrent *int, tokensPerDay *int64) error {
	if maxConcurrent != nil && *maxConcurrent < 0 || tokensPerDay != nil && *tokensPerDay < 0 {
		return sema.Errorf(CodeTenantInvalid, "tenant limits cannot be negative (0: no limit)")
	}
	return s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		var cur struct {
			max int
			day int64
		}
		err := queryRow(ctx, c, `SELECT max_concurrent, tokens_per_day FROM sema_serve_tenants WHERE name = ? AND deleted_ms IS NULL`, []any{name}, &cur.max, &cur.day)
		if errors.Is(err, errNoRow) {
			return sema.Errorf(CodeTenantInvalid, "there is no tenant %q; create it with sema serve token create", name)
		}
		if err != nil {
			return err
		}
		if maxConcurrent != nil {
			cur.max = *maxConcurrent
		}
		if tokensPerDay != nil {
			cur.day = *tokensPerDay
		}
		_, err = c.exec(ctx, `UPDATE sema_serve_tenants SET max_concurrent = ?, tokens_per_day = ? WHERE name = ?`, cur.max, cur.day, name)
		return err
	})
}

// Policy returns tenant name's policy (the zero policy when the operator set none).
func (s *Server) Policy(ctx context.Context, name string) (Policy, error) {
	var n int
	err := queryRow(ctx, s.b.db(), `SELECT 1 FROM sema_serve_tenants WHERE name = ? AND deleted_ms IS NULL`, []any{name}, &n)
	if errors.Is(err, errNoRow) {
		return Policy{}, sema.Errorf(CodeTenantInvalid, "there is no tenant %q", name)
	}
	if err != nil {
		return Policy{}, err
	}
	return s.policy(ctx, s.b.db(), name)
}

// policy reads tenant name's policy; a tenant the operator set none for has the zero
// policy.
func (s *Server) policy(ctx context.Context, c conn, name string) (Policy, error) {
	var data string
	err := queryRow(ctx, c, `SELECT policy FROM sema_serve_policies WHERE tenant = ?`, []any{name}, &data)
	if errors.Is(err, errNoRow) {
		return Policy{}, nil
	}
	if err != nil {
		return Policy{}, err
	}
	return storedPolicy(name, data)
}

// storedPolicy reads the policy stored for tenant name ("" when none was set).
func storedPolicy(name, data string) (Policy, error) {
	if data == "" {
		return Policy{}, nil
	}
	var p Policy
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return Policy{}, sema.Errorf(CodePolicyInvalid, "the stored policy of tenant %s does not read: %v; set it again", name, err)
	}
	return p, nil
}

// tenantPolicy is t's policy: as read with t, or from the store when t was built
// without it.
func (s *Server) tenantPolicy(ctx context.Context, t *tenant) (Policy, error) {
	if t.policyRead {
		return storedPolicy(t.name, t.policy)
	}
	return s.policy(ctx, s.b.db(), t.name)
}

// operatorModel reports whether model is a model word the operator lets tasks name.
func (s *Server) operatorModel(model string) bool {
	return model == "" || slices.Contains(s.cfg.Models, model)
}

// checkPolicy refuses a spec that asks for more than p allows, and fills in the bounds
// the spec left to the policy.
func (s *Server) checkPolicy(p Policy, spec *client.TaskSpec) error {
	if !modeAllowed(p, spec.PermissionMode) {
		return sema.Errorf(CodePolicyMode, "the tenant's policy does not allow permission_mode %s; use one of %q", spec.PermissionMode, allowedModes(p))
	}
	if !s.operatorModel(spec.Model) || spec.Model != "" && len(p.Models) > 0 && !slices.Contains(p.Models, spec.Model) {
		return sema.Errorf(CodePolicyModel, "the model %q is not one the tenant may name; leave model out for the service's default, or ask the operator", spec.Model)
	}
	if p.MaxTurns > 0 {
		if spec.MaxTurns > p.MaxTurns {
			return sema.Errorf(CodePolicyMaxTurns, "max_turns %d is above the tenant's bound of %d; ask for %d or fewer", spec.MaxTurns, p.MaxTurns, p.MaxTurns)
		}
		if spec.MaxTurns == 0 {
			spec.MaxTurns = p.MaxTurns
		}
	}
	if p.MaxUSDPerTask > 0 {
		if spec.MaxBudgetUSD > p.MaxUSDPerTask {
			return sema.Errorf(CodePolicyBudget, "max_budget_usd %g is above the tenant's bound of %g; ask for %g or less", spec.MaxBudgetUSD, p.MaxUSDPerTask, p.MaxUSDPerTask)
		}
		if spec.MaxBudgetUSD == 0 {
			spec.MaxBudgetUSD = p.MaxUSDPerTask
		}
	}
	return nil
}

// settleMode decides, under a policy that lists the modes a task may run in, the mode of
// a leg whose task names none. Left empty, the leg would run in a resumed session's
// recorded mode, or a new session's settings' defaultMode (which the tenant writes), or
// default — none of them judged by the list. A resumed session's recorded mode is judged
// (refused when the list no longer holds it: continue it naming a mode; kept, as the
// runner keeps it, when it does); a new session runs in default when the list holds it,
// else in the list's first mode.
func (s *Server) settleMode(ctx context.Context, p Policy, spec *agent.TaskSpec) error {
	if spec.PermissionMode != "" || len(p.PermissionModes) == 0 {
		return nil
	}
	if spec.Resume != nil {
		sess, err := s.b.sessions().Get(ctx, spec.Resume.SessionID)
		if err != nil && !sema.IsCode(err, session.CodeNotFound) {
			return err
		}
		if recorded := sess.Mode; err == nil && recorded != "" {
			if !slices.Contains(p.PermissionModes, recorded) {
				return sema.Errorf(CodePolicyMode, "the session's permission mode %s is not one the tenant's policy allows (%s); continue it naming one of them", recorded, strings.Join(p.PermissionModes, ", "))
			}
			return nil // kept as the runner keeps it (a plan approved leaves plan)
		}
	}
	mode := "default"
	if !slices.Contains(p.PermissionModes, mode) {
		mode = p.PermissionModes[0]
	}
	spec.PermissionMode = permission.Mode(mode)
	return nil
}

// modeAllowed reports whether p lets a task name mode ("" — the session's or the
// settings' mode — is settled where the leg starts: see settleMode).
func modeAllowed(p Policy, mode string) bool {
	if mode == "" {
		return true
	}
	if len(p.PermissionModes) == 0 {
		return mode != string(permission.ModeBypassPermissions)
	}
	return slices.Contains(p.PermissionModes, mode)
}

func allowedModes(p Policy) []string {
	if len(p.PermissionModes) > 0 {
		return p.PermissionModes
	}
	return []string{"default", "acceptEdits", "plan", "auto", "dontAsk"}
}

// applyPolicy puts the tenant's policy on a leg about to start: its rules, sandbox and
// network, its bounds, and the tokens left of the tenant's day, so that a leg stops
// (budget_exceeded) when the day's budget runs out rather than after it; the returned
// legSpend records the leg's spend and holds the budget as it runs. A leg whose stored
// spec the policy no longer allows (it changed since the task was queued) is refused.
func (s *Server) applyPolicy(ctx context.Context, t *taskRow, start *legStart, spec *agent.TaskSpec) (*legSpend, error) {
	p, err := storedPolicy(t.tenant, start.policy)
	if err != nil {
		return nil, err
	}
	if !modeAllowed(p, string(spec.PermissionMode)) {
		return nil, sema.Errorf(CodePolicyMode, "the tenant's policy no longer allows permission_mode %s", spec.PermissionMode)
	}
	if err := s.settleMode(ctx, p, spec); err != nil {
		return nil, err
	}
	// An empty mode takes no defaultMode from the workspace's settings, which the
	// tenant writes (an untrusted workspace's is dropped), and a resumed session keeps
	// the mode a checked leg recorded.
	spec.DisallowedTools = append(spec.DisallowedTools, p.Deny...)
	spec.AskTools = append(spec.AskTools, p.Ask...)
	if p.Sandbox == "required" {
		spec.Sandbox = sandbox.ModeOn
	}
	if p.Network != "" {
		spec.SandboxNetwork = p.Network
	}
	if p.MaxTurns > 0 && (spec.MaxTurns == 0 || spec.MaxTurns > p.MaxTurns) {
		spec.MaxTurns = p.MaxTurns
	}
	if p.MaxUSDPerTask > 0 && (spec.MaxBudgetUSD == 0 || spec.MaxBudgetUSD > p.MaxUSDPerTask) {
		// The policy's bound, not the task's budget: no decision lifts it (FirmBudgetUSD).
		spec.MaxBudgetUSD, spec.FirmBudgetUSD = p.MaxUSDPerTask, true
	}
	tokens := p.MaxTokensPerTask
	perDay := start.perDay
	if perDay > 0 {
		used, err := tokensToday(ctx, s.b.db(), t.tenant, nowMS())
		if err != nil {
			return nil, err
		}
		left := perDay - used
		if left <= 0 {
			return nil, dayExhausted(used, perDay)
		}
		if tokens == 0 || left < tokens {
			tokens = left
		}
	}
	if tokens > 0 {
		spec.MaxTokensTotal, spec.FirmTokensTotal = tokens, true // the policy's or the day's, not the task's
	}
	return &legSpend{s: s, task: t, perDay: perDay}, nil
}

func dayExhausted(used, perDay int64) error {
	return sema.Errorf(CodeTokenLimit, "the tenant spent %d of its %d tokens in the last 24 hours; try again later", used, perDay)
}

// errDayExhausted is the cause of a leg's cancellation by its tenant's daily budget.
var errDayExhausted = errors.New("the tenant's tokens for the day are spent")

// lockTenant takes tenant name's row for the rest of the transaction c, so that the
// limit checked after it (the tasks queued or running) holds against every other
// submission on any node (a daily token budget needs no lock: a submission spends
// nothing): on Postgres the update holds the row lock until
// commit, and a concurrent submission waits for it and then counts the committed task;
// SQLite's one writer serialises them already.
func lockTenant(ctx context.Context, c conn, name string) error {
	_, err := c.exec(ctx, `UPDATE sema_serve_tenants SET name = name WHERE name = ?`, name)
	return err
}

// admitRun refuses to queue one more leg of tenant t when its tasks queued or running
// are at its limit: a new task, or a decided one going back to the queue (a parked task
// holds no slot, so without this a tenant could park many and approve them together).
// It takes the tenant's row first (lockTenant), so two nodes never both admit the last
// slot. A tenant without a limit takes no lock: there is nothing to count, and on
// Postgres the row lock made every submission of the tenant wait for the one before it
// to commit.
func admitRun(ctx context.Context, c conn, t *tenant) error {
	if t.maxConcurrent <= 0 {
		return nil
	}
	if err := lockTenant(ctx, c, t.name); err != nil {
		return err
	}
	var n int
	if err := queryRow(ctx, c, `SELECT COUNT(*) FROM sema_serve_tasks WHERE tenant = ? AND status IN (?, ?)`,
		[]any{t.name, client.StatusQueued, client.StatusRunning}, &n); err != nil {
		return err
	}
	if n >= t.maxConcurrent {
		return sema.Errorf(CodeConcurrencyLimit, "the tenant has %d tasks queued or running, its limit; wait for one to end", n)
	}
	return nil
}

// tenantExists refuses, by name, a tenant that was never created or was deleted: what an
// operator attaches to a tenant (a policy, a managed-settings file) needs the tenant.
func tenantExists(ctx context.Context, c conn, name string) error {
	var n int
	err := queryRow(ctx, c, `SELECT 1 FROM sema_serve_tenants WHERE name = ? AND deleted_ms IS NULL`, []any{name}, &n)
	if errors.Is(err, errNoRow) {
		return sema.Errorf(CodeTenantInvalid, "there is no tenant %q; create it with sema serve token create", name)
	}
	return err
}
