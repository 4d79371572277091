package agent

// A shell line is a command the person typed (the terminal's "!" line). Its leg asks
// the model nothing: it runs the line as one Bash call through the same path a model's
// call takes — runTool: the permission fold with its deny rules and PreToolUse hooks,
// the call's intent, the sandbox, file history and the protected paths' guard, the
// PostToolUse hooks — and records what the command printed as a user entry, which the
// next leg's model reads with the rest of the conversation.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
	"github.com/sema-agent/sema/internal/runend"
	"github.com/sema-agent/sema/internal/transcript"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/shell"
)

// AnsweredByPerson is the person who typed a shell line (TaskSpec.ShellLine): typing it
// answered the question the fold asked about that exact command.
const AnsweredByPerson AnsweredBy = "person"

// shellLineTimeout is the line's timeout: the longest a Bash call may have. The person
// who typed it is there to interrupt it.
const shellLineTimeout = shell.MaxTimeout

// typedLine is the call a shell line runs, carried in its context to the fold (decide),
// which notes whether it let the call run.
type typedLine struct {
	tool    string
	input   json.RawMessage
	allowed bool
}

type typedLineKey struct{}

// validateShellLine is the door of a shell line: one it could not run as typed is
// refused before anything runs.
func validateShellLine(deps *Deps, spec *TaskSpec, answer *Answer) error {
	line := spec.ShellLine
	if line == "" {
		return nil
	}
	why := ""
	switch {
	case strings.TrimSpace(line) == "":
		why = "the shell line is blank; give the command to run"
	case spec.Prompt != "" || len(spec.Images) > 0:
		why = "a task runs a prompt (with its images) or a shell line, not both; send the shell line as a task of its own"
	case strings.ContainsRune(line, 0):
		why = "the shell line holds a NUL byte, which no shell command can; remove it"
	case answer != nil:
		why = "an answer runs the parked call it answers; send the shell line as a task of its own"
	case spec.resume().Continue:
		why = "Continue asks the model again, and a shell line asks it nothing; leave Continue off"
	}
	if why == "" {
		if _, ok := deps.Env.(env.Executor); !ok {
			why = "the environment (Deps.Env) cannot run programs, so a shell line has nowhere to run"
		}
	}
	if why != "" {
		return configError(CodeShellLineInvalid, "%s", why)
	}
	return nil
}

// runShellLine is the leg of a shell line, after the conversation was mended: the
// session's start hooks, the call, and — when it ran — the entry the next model reads.
// A line the fold or the read-only shell refused runs nothing and records nothing: the
// leg ends with status error and the refusal's code.
func (l *leg) runShellLine(ctx context.Context, s *turnLoop) {
	var extra []string
	if l.link == nil {
		source := "startup"
		if l.spec.Resume != nil {
			source = "resume"
		}
		extra = l.sessionStartHooks(ctx, source)
	}
	if l.stopped(s.res) {
		return
	}
	name := shell.NameBash
	if l.spec.ReadOnly {
		name = shell.NameBashReadonly
	}
	input, _ := json.Marshal(map[string]any{"command": l.spec.ShellLine, "timeout": shellLineTimeout.Milliseconds()})
	call := model.Block{Kind: model.KindToolUse, ID: shellLineID(), Name: name, Input: input}
	// What the line changes lands at a boundary of the session's last turn (turn 1 before
	// any): a rewind to that turn's start undoes it, and one to the next turn's keeps it,
	// as the line ran between the two.
	l.beginTurn(ctx, max(s.turn, 1))
	tl := &typedLine{tool: name, input: input}
	l.emit(Event{Type: EventToolUse, Turn: s.turn, ToolUse: &ToolUse{ID: call.ID, Name: call.Name, Input: call.Input}})
	r := l.runTool(context.WithValue(l.callCtx(ctx, call, 0), typedLineKey{}, tl), call)
	l.flush(s.turn) // the permission events before the result
	l.resultBlock(s.turn, call, r, nil, 0)
	s.res.Result = r.TextOf()
	if l.stopped(s.res) {
		return
	}
	if !tl.allowed || name == shell.NameBashReadonly && notProvenReadOnly(r) {
		if ctx.Err() != nil {
			s.res.Status, s.res.Error = runend.Cancelled(context.Cause(ctx))
			return
		}
		s.res.Status, s.res.Error = sema.StatusError, &sema.Error{Code: r.Code, Message: r.TextOf()}
		return
	}
	m := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(shellLineEntry(l.spec.ShellLine, r.TextOf()))}}
	m = withContext(m, extra)
	s.msgs = appendUser(s.msgs, m)
	l.recordLater(ctx, transcript.KindUser, m)
	l.storeReadState(ctx)
	l.flushRecords(ctx)
	if l.stopped(s.res) {
		return
	}
	if ctx.Err() != nil {
		s.res.Status, s.res.Error = runend.Cancelled(context.Cause(ctx))
		return
	}
	s.res.Status = sema.StatusCompleted
}

// answerTypedLine is the fold's answer for the shell line's own call: where the fold
// asks, the person typing the line approved it — unless plan mode is on (a line not
// proven read-only does not run while planning) or a PreToolUse hook rewrote it (the
// person approved the line as typed, not the rewrite). It notes whether the call runs.
func (l *leg) answerTypedLine(ctx context.Context, tl *typedLine, call permission.Call, d permission.Decision) permission.Decision {
	if call.Tool != tl.tool || !jsonEqual(call.Input, tl.input) {
		return d // another call (none runs in a shell line's leg, but the fold is shared)
	}
	if d.Behavior == permission.Ask {
		asked := d
		switch {
		case l.modes.Current() == permission.ModePlan:
			d = permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerMode,
				Reason: "Plan mode is on, and the line is not proven read-only (" + strings.TrimSuffix(asked.Reason, ".") + "); it does not run while planning. Leave plan mode to run it."}
		case len(asked.UpdatedInput) > 0 && !jsonEqual(asked.UpdatedInput, call.Input):
			d = permission.Decision{Behavior: permission.Deny, DecidedBy: permission.LayerHook,
				Reason: "A PreToolUse hook rewrote the line and asks about the rewrite (" + strings.TrimSuffix(asked.Reason, ".") + "); typing the line approved it as typed, not the rewrite, so it did not run."}
		default:
			d = permission.Decision{Behavior: permission.Allow, DecidedBy: permission.LayerUser, Reason: "The person typed this command."}
			l.question(PermissionQuestion{Tool: call.Tool, Input: json.RawMessage(orEmpty(call.Input)), Message: asked.Reason,
				Gate: gateOf(asked), PersonOnly: asked.PersonOnly, AnsweredBy: AnsweredByPerson, Behavior: permission.Allow})
		}
	}
	tl.allowed = d.Behavior == permission.Allow
	return d
}

// notProvenReadOnly reports a bash_readonly answer that refused the command before it
// ran: its proof, not the command, failed.
func notProvenReadOnly(r tools.Result) bool {
	if !r.IsError {
		return false
	}
	switch r.Code {
	case shell.CodeNotReadOnly, fence.CodeNotInRoot, fence.CodeDenied, fence.CodeUnresolvable, fence.CodeHardLink:
		return true
	}
	return false
}

// shellLineEntry is what the next model reads of a shell line: the command and its
// answer as a Bash call gets it (output capped alike, a failed exit said).
func shellLineEntry(line, answer string) string {
	return "The person ran this in the shell:\n$ " + line + "\n" + answer
}

// titleText is what a new session's title is made of: the prompt, or the shell line
// after its "!".
func (s *TaskSpec) titleText() string {
	if s.ShellLine != "" {
		return "! " + s.ShellLine
	}
	return s.Prompt
}

// shellLineID names the line's call in the events, the denials and the call's intent.
func shellLineID() string {
	var b [12]byte
	rand.Read(b[:])
	return "shell_" + hex.EncodeToString(b[:])
}
