package permission

import (
	"encoding/json"

	"github.com/sema-agent/sema/tools"
)

// Behavior is a decision's verdict.
type Behavior string

const (
	// Allow lets the call run.
	Allow Behavior = "allow"
	// Deny refuses the call; the model sees the decision's sentence.
	Deny Behavior = "deny"
	// Ask puts the call to the leg's answerers: the mode (dontAsk refuses), auto's
	// classifier, else the Approver.
	Ask Behavior = "ask"
)

// CodeDenied is the code of a call the permission fold refused, as the model's tool
// result and TaskResult.PermissionDenials carry it. It is tools.CodePermissionDenied:
// the tool packages answer with it from their permission seats without depending on
// this package.
const CodeDenied = tools.CodePermissionDenied

// Layer says which layer of the permission fold decided a call (Decision.DecidedBy).
type Layer string

const (
	// LayerRule: an allow, deny or ask rule.
	LayerRule Layer = "rule"
	// LayerHook: a PreToolUse hook.
	LayerHook Layer = "hook"
	// LayerMode: the mode's own answer or question (the write gate, the plan question,
	// the unstated question, dontAsk's refusal).
	LayerMode Layer = "mode"
	// LayerSafety: a safety station (delete guard, protected path, boundary finding).
	LayerSafety Layer = "safety"
	// LayerTool: the tool's own station (the shell station, a read-only tool).
	LayerTool Layer = "tool"
	// LayerClassifier: the auto-mode classifier answered the question.
	LayerClassifier Layer = "classifier"
	// LayerUser: a person (or the host's approver) answered the question.
	LayerUser Layer = "user"
)

// The questions an ask can be, as a parked checkpoint records them.
const (
	// GateToolPermission is the ordinary question about one tool call.
	GateToolPermission = "tool_permission"
	// GatePlanReview is ExitPlanMode's question: approve the plan and leave plan mode.
	GatePlanReview = "plan_review"
	// GateBudget is the question a parking run asks before a model request that would
	// pass its token or dollar budget: raise the budget and go on, or end the run.
	GateBudget = "budget"
)

// Decision is the gate's answer for one call.
type Decision struct {
	// Behavior is the verdict: Allow, Deny, or Ask when the call is a question still to
	// be put to the leg's answerers.
	Behavior Behavior `json:"behavior"`
	// DecidedBy is the layer that decided.
	DecidedBy Layer `json:"decided_by"`
	// Reason is one sentence for the model (on a deny) or for the person asked.
	Reason string `json:"reason"`
	// Rule is the rule that decided, in rule syntax, when DecidedBy is LayerRule.
	Rule string `json:"rule,omitempty"`
	// UpdatedInput, when set, is the input the tool must run with instead of the
	// model's: a hook's rewrite, or an approver's edit (already judged again by the deny
	// rules).
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// PersonOnly marks a question of the plan gate, the safety stations or a tool that
	// requires a person for every call: no rule, hook allow or classifier may answer it,
	// only a person (or, non-interactively, a refusal).
	PersonOnly bool `json:"person_only,omitempty"`
	// Gate names the question of an ask: GateToolPermission or GatePlanReview.
	Gate string `json:"gate,omitempty"`
}

// DeclaredBy says who defined the called tool.
type DeclaredBy string

const (
	// DeclaredByEngine: one of sema's own tools (Read, Write, Bash, …). The zero value.
	DeclaredByEngine DeclaredBy = ""
	// DeclaredByCaller: a tool the deployment or the task's caller mounted.
	DeclaredByCaller DeclaredBy = "caller"
	// DeclaredByMCP: a tool an MCP server mounted. An MCP tool states no permission of
	// its own: it is always a passthrough tool.
	DeclaredByMCP DeclaredBy = "mcp"
)

// Scope is what one leg's calls are judged against. Every path is canonical. The caller
// fills it once per leg (from the fence) and copies it into every Call.
type Scope struct {
	// Root is the canonical task root: path rules and relative shell paths resolve
	// against it. Empty: the first write root.
	Root string
	// Home is the canonical home directory: "~" in rules and commands, and a removal
	// target the delete guard keeps. Empty: no home directory is known.
	Home string
	// WriteRoots are the leg's write roots: the task root, the additional directories
	// and the admitted advertised directories.
	WriteRoots []string
	// ReadRoots are the read roots: the write roots and the additional read directories.
	ReadRoots []string
	// ExemptDirs are the directories no mode write question covers (the scratchpad, the
	// admitted advertised directories). An entry that equals or contains a write root
	// is ignored, with a CodeExemptDirSwallowsRoot notice.
	ExemptDirs []string
}

// PathTarget is one path a file tool call names, resolved by the caller through the
// fence.
type PathTarget struct {
	// Abs is the path as spelled, made absolute against the task root and cleaned
	// lexically (symbolic links not resolved).
	Abs string
	// Canonical is the path with every symbolic link resolved; "" when it could not be
	// resolved (the call's target cannot be placed).
	Canonical string
	// Protected marks a write target in the protected set (fence.IsProtected).
	Protected bool
	// ProtectedReason says why, when Protected.
	ProtectedReason string
}

// Call is one tool call as the gate judges it.
type Call struct {
	// Tool is the called tool's name.
	Tool string
	// Effect is the tool's effect on the leg's roster.
	Effect tools.Effect
	// EffectDefaulted reports that nobody declared the effect and Effect is the
	// fail-closed default (exec); only then does ReadOnlyHint count.
	EffectDefaulted bool
	// DeclaredBy says who defined the tool.
	DeclaredBy DeclaredBy
	// ReadOnlyHint is a claim that the tool only reads: an MCP server's readOnlyHint, or
	// a caller tool's tools.Spec.ReadOnlyHint. It counts only where EffectDefaulted, and
	// only for the plan gate's question.
	ReadOnlyHint bool
	// Passthrough marks a tool that states no permission of its own
	// (tools.SeatPassthrough): an allow nobody stated meets the mode's answer for such
	// calls (ask, except in bypassPermissions). MCP tools are always passthrough.
	Passthrough bool
	// PassthroughQuestion is the question put for an unstated call; "" puts the
	// standard sentence.
	PassthroughQuestion string
	// SeatOf, when set, is the seat of a tool whose seat depends on its arguments (see
	// SeatReader): the gate reads it off the input it is judging — the model's, a
	// hook's rewrite, an approver's edit — and its answer replaces Passthrough and
	// PassthroughQuestion. Nil: those two are the seat.
	SeatOf func(input json.RawMessage) (passthrough bool, question string) `json:"-"`
	// RequiresUserInteraction marks a tool every call of which only a person may
	// approve (tools.Spec.RequiresUserInteraction): the gate turns every answer but a
	// deny into a PersonOnly question, in every mode, bypassPermissions included.
	RequiresUserInteraction bool
	// Input is the call's raw JSON input.
	Input json.RawMessage
	// Paths are the file targets of a file tool (Read, Write, Edit, …), resolved through
	// the fence. The gate fills them from Input.
	Paths []PathTarget
	// Command is a Bash call's command. The gate fills it from Input.
	Command string
	// RunInBackground is a Bash call's run_in_background flag. The gate fills it from
	// Input.
	RunInBackground bool
	// URL is a WebFetch call's url. The gate fills it from Input.
	URL string

	Scope
}

// SeatReader is implemented by a tool whose permission seat depends on its arguments:
// a skill tool whose skill declares what it may run asks "Execute skill: NAME" for that
// skill and answers for itself for another. The runner reads it for a deployment's
// tool (Call.SeatOf), so the seat follows the input being judged, a hook's rewrite and
// an approver's edit included. passthrough true makes the call one whose allow nobody
// stated meets the mode's unstated question, put as question ("" for the standard
// sentence); false: the tool answers for itself.
type SeatReader interface {
	// PermissionSeatOf reads the seat off one call's input. It must not block or
	// change anything; a panic reads as passthrough.
	PermissionSeatOf(input json.RawMessage) (passthrough bool, question string)
}
