// Package hookfold folds what a leg's hooks answered into what the leg acts on: the
// PreToolUse answer as a seat of the permission fold, the feedback a PostToolUse hook
// adds to a result, whether a Stop hook sends the model back to work, the notices a
// person sees. It also shapes the event inputs whose JSON the engine itself defines
// (a call's result as PostToolUse hooks read it, the permission prompt's notification).
// It runs no hook: the leg runs them (hooks.Set.Run) and hands over the hooks.Result.
package hookfold

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// PreToolUse is the PreToolUse hooks' answer as the permission fold's hook seat. Any
// failure — a timeout, a crash, an exit other than 0 and 2, output that is not the
// protocol's, two rewrites that disagree — is an error, which refuses the call; a stop
// denies it; otherwise the strictest answer, with the hooks' rewrite of the input.
func PreToolUse(res hooks.Result) (permission.HookDecision, error) {
	if len(res.Failures) > 0 {
		f := res.Failures[0]
		return permission.HookDecision{}, errors.New("the hook " + Name(f.Hook) + " " + f.Why)
	}
	if res.Conflict {
		return permission.HookDecision{}, errors.New("two hooks rewrote the input differently")
	}
	if res.Stop {
		return permission.HookDecision{Behavior: permission.Deny, Reason: cmp.Or(res.StopReason, "a hook stopped the run")}, nil
	}
	switch {
	case res.Block || res.Permission == "deny":
		return permission.HookDecision{Behavior: permission.Deny, Reason: cmp.Or(res.PermissionReason, res.BlockReason)}, nil
	case res.Permission == "ask":
		return permission.HookDecision{Behavior: permission.Ask, Reason: res.PermissionReason, UpdatedInput: res.UpdatedInput}, nil
	case res.Permission == "allow":
		return permission.HookDecision{Behavior: permission.Allow, Reason: res.PermissionReason, UpdatedInput: res.UpdatedInput}, nil
	}
	return permission.HookDecision{UpdatedInput: res.UpdatedInput}, nil
}

// PostToolUseEvent is the event a call's end fires: PostToolUseFailure for a failed
// call.
func PostToolUseEvent(r tools.Result) hooks.Event {
	if r.IsError {
		return hooks.PostToolUseFailure
	}
	return hooks.PostToolUse
}

// PostToolUseInput adds a call's end to in: the error text of a failed call, or the
// result as PostToolUse hooks read it — the text the model saw and, for a write, the
// file it changed (the field Claude Code's formatters read).
func PostToolUseInput(in hooks.Input, r tools.Result, text string) hooks.Input {
	if r.IsError {
		in.Error = text
		return in
	}
	out := map[string]any{"content": text, "success": !r.IsError}
	if r.EditedFile != "" {
		out["filePath"] = r.EditedFile
	}
	in.ToolResponse, _ = json.Marshal(out)
	return in
}

// PostToolUseFeedback is what the PostToolUse hooks of event add for the model to the
// call's result: a block's reason, then their additional context.
func PostToolUseFeedback(event hooks.Event, res hooks.Result) []string {
	var add []string
	if res.Block {
		add = append(add, fmt.Sprintf("%s hook feedback: %s", event, res.BlockReason))
	}
	return append(add, res.Context...)
}

// StopsRun reports whether a hook of event stopping (continue: false) stops the run,
// and the sentence that says so. For the events that end a leg, stopping is what the
// leg does anyway.
func StopsRun(event hooks.Event, res hooks.Result) (string, bool) {
	if !res.Stop || event == hooks.Stop || event == hooks.SubagentStop || event == hooks.SessionEnd {
		return "", false
	}
	return "a " + string(event) + " hook stopped the run: " + cmp.Or(res.StopReason, "(no reason given)"), true
}

// PromptBlocked is the sentence of a prompt a UserPromptSubmit hook blocked, and
// whether one did.
func PromptBlocked(res hooks.Result) (string, bool) {
	if !res.Block {
		return "", false
	}
	return "a UserPromptSubmit hook blocked the prompt: " + cmp.Or(res.BlockReason, "(no reason given)"), true
}

// Continue is the reason to go on with when a Stop (or SubagentStop) hook blocked the
// stop; a hook that also stopped the run lets it end.
func Continue(event hooks.Event, res hooks.Result) (string, bool) {
	if !res.Block || res.Stop {
		return "", false
	}
	return cmp.Or(res.BlockReason, "A "+string(event)+" hook asks you to continue."), true
}

// NotificationInput adds the permission prompt's notification for a question about
// tool to in.
func NotificationInput(in hooks.Input, tool string) hooks.Input {
	in.Message, in.NotificationType = "sema needs your permission to use "+tool, "permission_prompt"
	return in
}

// MessageNotice is a hook's message to the person.
func MessageNotice(event hooks.Event, m string) sema.Notice {
	return sema.Notice{Code: hooks.CodeMessage, Message: fmt.Sprintf("%s hook: %s", event, m), Detail: map[string]any{"event": string(event)}}
}

// FailureNotice tells the person a hook of event failed.
func FailureNotice(event hooks.Event, f hooks.Failure) sema.Notice {
	return sema.Notice{Code: hooks.CodeFailed, Message: fmt.Sprintf("a %s hook (%s) failed: %s", event, Name(f.Hook), f.Why),
		Detail: map[string]any{"event": string(event), "source": f.Hook.Source, "timed_out": f.TimedOut}}
}

// Name names a hook for a person: its command's first line, or where a Go hook came
// from.
func Name(h hooks.Hook) string {
	if h.Command != "" {
		return firstLine(h.Command, 120)
	}
	return "a Go hook from " + cmp.Or(h.Source, "Deps.Hooks.Events")
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
