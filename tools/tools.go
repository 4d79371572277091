// Package tools defines what a tool is to the engine: a spec the model sees (name,
// description, JSON schema), the effect the permission gate reasons about, and a Run
// method that always answers with a Result. It knows no particular tool; the tool
// packages (tools/files, tools/shell, …) build them and the runner assembles a Roster.
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

// Spec is a tool's description.
type Spec struct {
	// Name is what the model calls the tool by and what permission rules match
	// ("Read", "Bash", …).
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// InputSchema is a JSON Schema object for the tool's input.
	InputSchema json.RawMessage
	// Effect is what the permission gate reasons about; read tools of one model turn
	// may run concurrently.
	Effect Effect
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
