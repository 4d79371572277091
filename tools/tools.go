// Package tools defines what a tool is to the engine: a spec the model sees (name,
// description, JSON schema), the seats the permission gate reads on every call (the
// declared effect, the permission seat, a read-only claim, a person's approval for every
// call), and a Run method that always answers with a Result. It knows no particular
// tool; the tool packages (tools/files, tools/shell, …) build them, an embedder makes its
// own with Func or FuncOf, and the runner assembles a Roster.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// Effect is what a tool can do to the world, as the permission gate reads it.
type Effect string

const (
	// EffectRead tools only read (Read, Glob, Grep, LS). Calls of read tools in one model
	// turn may run concurrently.
	EffectRead Effect = "read"
	// EffectWrite tools change files through the write lane (Write, Edit, …).
	EffectWrite Effect = "write"
	// EffectExec tools run programs (Bash).
	EffectExec Effect = "exec"
)

// Seat is a tool's permission seat: who answers for a call of the tool when no rule,
// hook or mode station of the permission fold stated an answer.
type Seat string

const (
	// SeatOwn is the zero value: the tool answers for itself. The engine's stations and
	// the deployment's rules decide its calls, and a call none of them asks about runs.
	// The engine's own tools all sit here.
	SeatOwn Seat = ""
	// SeatPassthrough marks a tool that states no permission of its own: an allow no
	// layer of the fold stated meets the mode's answer for an unstated call, which is a
	// question in every mode but bypassPermissions. An MCP tool always sits here.
	SeatPassthrough Seat = "passthrough"
)

// Spec is a tool's description: what the model sees (Name, Description, InputSchema)
// and the seats the permission gate reads for every call of the tool (Effect,
// PermissionSeat, PassthroughQuestion, ReadOnlyHint, RequiresUserInteraction). The
// engine's own tools declare an Effect and no other seat.
type Spec struct {
	// Name is what the model calls the tool by and what permission rules match
	// ("Read", "Bash", …).
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// InputSchema is a JSON Schema object for the tool's input.
	InputSchema json.RawMessage
	// Effect is the tool's declared effect, what the permission gate reasons about, and
	// the only fact that lets calls of one model turn run concurrently (every one of them
	// must declare EffectRead). Empty: nobody declared one, and the runner treats the
	// tool as EffectExec (fail-closed), remembering that the effect was defaulted so
	// that ReadOnlyHint may count.
	Effect Effect
	// PermissionSeat is who answers for a call no station of the fold answered:
	// SeatOwn (the zero value: the tool itself) or SeatPassthrough (the mode's unstated
	// question). A word that is neither is refused when a run starts; read at a call, it
	// counts as SeatPassthrough, the stricter of the two.
	PermissionSeat Seat
	// PassthroughQuestion is the question put to the leg's answerers when a
	// passthrough call meets the mode's unstated question. Empty: the standard
	// sentence, "The tool NAME states no permission of its own; allow this call?". It
	// is meaningful only with SeatPassthrough, and refused when a run starts without it,
	// so that a caller who wrote a question believing the tool asks learns it does not.
	PassthroughQuestion string
	// ReadOnlyHint is the tool author's claim that the tool only reads (as an MCP
	// server's readOnlyHint is). A claim ranks below a declaration: it counts only where
	// Effect is empty, and then only for plan mode's question, which it spares the
	// call. It never lets calls run concurrently and never makes a call the mode's own
	// read-only allow: a declared Effect, EffectExec included, always outranks it.
	ReadOnlyHint bool
	// RequiresUserInteraction makes every call of the tool a question only a person may
	// answer: no allow rule, no mode (bypassPermissions included), no hook's allow and
	// no auto-mode classifier runs it, only a person saying yes to this very call; where
	// nobody can be asked (dontAsk, an OnAsk of deny, no approver) the call is refused.
	// A deny rule still refuses it outright.
	RequiresUserInteraction bool
}

// CodeSpecInvalid refuses, before a run starts, a tool spec whose seats hold a word the
// permission gate does not know: a guessed Effect or PermissionSeat would otherwise be
// read as some other seat than the one its author meant.
const CodeSpecInvalid = "config.tool_spec_invalid"

// Validate refuses a spec the permission gate would misread, with a *sema.Error of code
// CodeSpecInvalid: an empty Name, an Effect other than EffectRead, EffectWrite,
// EffectExec or empty, a PermissionSeat other than SeatOwn or SeatPassthrough, and a
// PassthroughQuestion on a tool that is not SeatPassthrough (the question would never be
// put). The runner validates every Deps.Tools spec when a run starts.
func (s Spec) Validate() error {
	switch {
	case s.Name == "":
		return sema.Errorf(CodeSpecInvalid, "a tool has no name; set Spec.Name")
	case s.Effect != "" && s.Effect != EffectRead && s.Effect != EffectWrite && s.Effect != EffectExec:
		return sema.Errorf(CodeSpecInvalid, "the tool %s declares the effect %q; use read, write or exec (or leave it empty for exec)", s.Name, s.Effect).With("tool", s.Name)
	case s.PermissionSeat != SeatOwn && s.PermissionSeat != SeatPassthrough:
		return sema.Errorf(CodeSpecInvalid, "the tool %s declares the permission seat %q; use passthrough (or leave it empty for the tool's own)", s.Name, s.PermissionSeat).With("tool", s.Name)
	case s.PassthroughQuestion != "" && s.PermissionSeat != SeatPassthrough:
		return sema.Errorf(CodeSpecInvalid, "the tool %s sets a PassthroughQuestion but not the passthrough seat, so the question would never be put; set PermissionSeat to passthrough or drop the question", s.Name).With("tool", s.Name)
	}
	return nil
}

// ModelSpec is the part of s the model sees.
func (s Spec) ModelSpec() model.ToolSpec {
	return model.ToolSpec{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema}
}

// Tool is one callable tool of a leg. Run must always return a Result: failures the
// model should see (a bad path, a refused write) are error Results with a code, never Go
// errors or panics. Run honours ctx.
type Tool interface {
	// Spec describes the tool to the model and to the permission gate.
	Spec() Spec
	// Run executes one call with the model's input as sent, which may not match the
	// schema: the tool checks it and answers a mismatch with an error Result.
	Run(ctx context.Context, input json.RawMessage) Result
}

// Func returns a Tool made of a spec and a function: the few lines an embedder needs for
// a tool of its own. Spec returns spec (its InputSchema copied, so a caller changing its
// slice later changes nothing), and Run calls run with the model's input as sent. run
// must honour the Tool contract: answer with a Result, failures as coded error Results;
// a panic is contained by the runner and answered as CodePanic. Func panics when run is
// nil, as a tool that can never answer is a mistake of the program, not of a call.
//
// A function rather than an exported struct keeps Spec and Run the tool's whole
// surface: there is no zero value with a nil function to guard at every call.
func Func(spec Spec, run func(ctx context.Context, input json.RawMessage) Result) Tool {
	if run == nil {
		panic("tools.Func: run is nil")
	}
	spec.InputSchema = bytes.Clone(spec.InputSchema)
	return funcTool{spec: spec, run: run}
}

// FuncOf is Func for a function that takes its input decoded: the model's input is
// decoded into a fresh In with Decode (strictly: an unknown field is refused), and an
// input that does not decode is answered with a CodeInputInvalid error Result without
// calling run. In is usually a struct whose json tags match spec.InputSchema; checks
// the schema states beyond the shape (a required field, a range) are run's to make.
func FuncOf[In any](spec Spec, run func(ctx context.Context, in In) Result) Tool {
	if run == nil {
		panic("tools.FuncOf: run is nil")
	}
	return Func(spec, func(ctx context.Context, input json.RawMessage) Result {
		var in In
		if err := Decode(input, &in); err != nil {
			return FromError(err, CodeInputInvalid)
		}
		return run(ctx, in)
	})
}

// funcTool is the Tool Func returns.
type funcTool struct {
	spec Spec
	run  func(ctx context.Context, input json.RawMessage) Result
}

func (t funcTool) Spec() Spec { return t.spec }

func (t funcTool) Run(ctx context.Context, input json.RawMessage) Result {
	return t.run(ctx, input)
}

// Result is a tool's answer. Content holds text and image blocks. An error Result has
// IsError set and a stable Code ("fs.path_not_in_root", "tool.input_invalid", …).
type Result struct {
	// Content is what the model sees: text and image blocks.
	Content []model.Block
	// IsError marks a failure the model should see and correct.
	IsError bool
	// Code is the stable code of an error Result; empty on success.
	Code string
	// EditedFile is the canonical path a write tool changed (or may have changed), empty
	// for every other call. The runner lists these in TaskResult.EditedFiles.
	EditedFile string
}

// Text returns a successful text Result.
func Text(s string) Result { return Result{Content: []model.Block{model.TextBlock(s)}} }

// Fail returns an error Result with a code and a message for the model.
func Fail(code, format string, args ...any) Result {
	return Result{Content: []model.Block{model.TextBlock(fmt.Sprintf(format, args...))}, IsError: true, Code: code}
}

// FromError turns err into an error Result, keeping the code of a *sema.Error (code
// fallback otherwise). The text is the error's message without codes (sema.MessageOf):
// the code is in the Result's Code, and a cause's code inside the sentence would only
// nest one code in another.
func FromError(err error, fallback string) Result {
	var se *sema.Error
	if errors.As(err, &se) {
		return Result{Content: []model.Block{model.TextBlock(sema.MessageOf(se))}, IsError: true, Code: se.Code}
	}
	return Fail(fallback, "%v", err)
}

// TextOf returns the concatenated text of r's content.
func (r Result) TextOf() string {
	var s string
	for _, b := range r.Content {
		if b.Kind == model.KindText {
			s += b.Text
		}
	}
	return s
}

// Codes every tool uses.
const (
	CodeInputInvalid = "tool.input_invalid" // the input does not match the schema
	CodeUnknown      = "tool.unknown"       // no tool of that name on this leg
	CodePanic        = "tool.panic"         // the tool panicked; the panic was contained
	CodeCancelled    = "tool.cancelled"     // the run was cancelled before or during the call
)

// Codes of a tool's permission seat (the hook the write lane and the shell ask before
// acting). They live here, beside the Tool interface, because the tool packages answer
// with them and must not depend on package permission, which judges; permission.CodeDenied
// is the same code under the name an embedder looks for.
const (
	// CodePermissionDenied: the permission seat refused the call without a code of its
	// own.
	CodePermissionDenied = "permission.denied"
	// CodePermissionFailed: the permission seat panicked, or did not answer before the
	// call ended; the call is refused.
	CodePermissionFailed = "permission.hook_failed"
)

// Decode unmarshals input into v strictly: unknown fields are refused, so a model that
// misspells a field learns it instead of having it ignored.
func Decode(input json.RawMessage, v any) error {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return sema.Errorf(CodeInputInvalid, "invalid input: %v", err)
	}
	return nil
}

// Roster is the ordered set of tools mounted on a leg.
type Roster []Tool

// Lookup returns the tool named name, or nil.
func (r Roster) Lookup(name string) Tool {
	for _, t := range r {
		if t.Spec().Name == name {
			return t
		}
	}
	return nil
}

// Names lists the tool names in order.
func (r Roster) Names() []string {
	out := make([]string, len(r))
	for i, t := range r {
		out[i] = t.Spec().Name
	}
	return out
}
