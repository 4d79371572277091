package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// bashTool is Bash; desc, which says how many background tasks the set allows, is
// built once (a roster look-up reads every spec it passes).
type bashTool struct {
	s    *Set
	desc string
}

type bashInput struct {
	Command         string   `json:"command"`
	Timeout         *float64 `json:"timeout"`
	Description     string   `json:"description"`
	RunInBackground bool     `json:"run_in_background"`
}

const bashDescription = `Runs a bash command and returns its output (stdout and stderr together, in the order they were written) and its exit code.

- The first command of the run starts in the task root. A cd carries over to later Bash calls while the directory stays inside the workspace roots; outside them the next command starts in the task root again, and the answer says so. Environment variables and shell state (functions, options) do not carry over: each call is a new shell. Prefer absolute paths.
- timeout is in milliseconds: default 120000 (2 minutes), at most 600000 (10 minutes). A command still running at its timeout is killed together with every process it started. Processes a command leaves running (cmd &, nohup) are stopped when the command ends; start servers and watchers with run_in_background instead.
- Output longer than 30000 characters keeps its first and last 15000 characters; the middle is elided and counted.
- Standard input is empty: interactive commands (editors, prompts, pagers) cannot be answered. Pass flags that make them non-interactive.
- run_in_background: true starts the command as a background task and returns its id at once; read its output with BashOutput and stop it with KillShell. Use it for servers and watchers. At most %d background tasks run at once.
- Prefer the Read, Glob, Grep and LS tools over cat, find, grep and ls for reading and searching files, and the Edit and Write tools over sed, echo or heredocs for changing them.
- description: a short sentence saying what the command does, for the person watching.`

var bashSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The bash command to run."},
    "timeout": {"type": "number", "description": "Timeout in milliseconds (default 120000, at most 600000)."},
    "description": {"type": "string", "description": "What the command does, in 5 to 10 words."},
    "run_in_background": {"type": "boolean", "description": "Run the command as a background task; read its output with BashOutput."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

func (t *bashTool) Spec() tools.Spec {
	return tools.Spec{Name: NameBash, Description: t.desc, InputSchema: bashSchema, Effect: tools.EffectExec}
}

func (t *bashTool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	s := t.s
	var in bashInput
	if err := tools.Decode(input, &in); err != nil {
		return tools.FromError(err, tools.CodeInputInvalid)
	}
	if blank(in.Command) {
		return tools.Fail(tools.CodeInputInvalid, "command is empty; give the bash command to run.")
	}
	timeout, bad := parseTimeout(in.Timeout)
	if bad != nil {
		return *bad
	}
	if ctx.Err() != nil {
		return cancelledResult("The call was cancelled before the command started; nothing ran.")
	}
	dir, note := s.startDir(ctx)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	hooks, note := s.coAuthorFor(in.Command)
	if note != "" {
		notes = append(notes, note)
	}
	if in.RunInBackground {
		return s.startBackground(ctx, in, dir, hooks, timeout, notes)
	}
	if r := s.permit(ctx, PermissionRequest{Tool: NameBash, Command: in.Command, Description: in.Description, Dir: dir, Timeout: timeout}); r != nil {
		return *r
	}
	after, snapNotes, refused := s.snapshotBefore(ctx, in.Command, false)
	if refused != nil {
		return *refused
	}
	notes = append(notes, snapNotes...)
	return s.runForeground(ctx, runSpec{
		tool: NameBash, command: in.Command, description: in.Description, dir: dir, timeout: timeout,
		cwdFile: s.cwdFile(), hooks: hooks, autoBackground: s.cfg.AutoBackgroundOnTimeout,
		recordAfter: after,
	}, notes)
}

// runSpec is one foreground command.
type runSpec struct {
	tool        string
	command     string
	description string
	dir         string
	timeout     time.Duration
	env         []string
	// cwdFile, when set, receives the final working directory (Bash); bash_readonly
	// leaves it empty: its directory never changes.
	cwdFile        string
	hooks          string
	autoBackground bool
	// recordAfter: Config.Changes snapshotted before the command, so it walks again after.
	recordAfter bool
}

// recorded appends the notes of the walk after a command, when one is owed.
func (s *Set) recorded(ctx context.Context, rs runSpec, notes []string) []string {
	if !rs.recordAfter {
		return notes
	}
	return append(notes, s.cfg.Changes.After(context.WithoutCancel(ctx))...)
}

// runForeground runs a command to its end, its timeout, the call's cancellation or the
// set's shutdown, and answers with its output.
func (s *Set) runForeground(ctx context.Context, rs runSpec, notes []string) tools.Result {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedResult()
	}
	s.calls.Add(1)
	s.mu.Unlock()
	defer s.calls.Done()

	if ctx.Err() != nil {
		return cancelledResult("The call was cancelled before the command started; nothing ran.")
	}
	out := &sink{cap: newCapture(OutputKeep)}
	pr, err := s.spawn(ctx, rs.dir, prelude(rs.cwdFile, rs.hooks)+rs.command, rs.env, rs.cwdFile, out)
	if err != nil {
		return tools.Fail(CodeStartFailed, "The shell could not be started: %v", err)
	}
	timer := time.NewTimer(rs.timeout)
	defer timer.Stop()
	var ended string
	select {
	case <-pr.exited:
	case <-timer.C:
		ended = "timeout"
	case <-ctx.Done():
		ended = "cancel"
	case <-s.done:
		ended = "shutdown"
	}
	if ended == "timeout" && rs.autoBackground && autoBackgroundEligible(rs.command) {
		if t, text, ok := s.adopt(pr, out, rs.command, rs.description, rs.cwdFile); ok {
			notes = s.recorded(ctx, rs, notes)
			body := strings.TrimRight(text, "\n")
			if body == "" {
				body = "(no output yet)"
			}
			notes = append(notes, fmt.Sprintf("The command was still running at its timeout of %d ms, so it was moved to the background as %s and keeps running. Read its further output with BashOutput {\"bash_id\": %q}; stop it with KillShell {\"shell_id\": %q}.",
				rs.timeout.Milliseconds(), t.id, t.id, t.id))
			return tools.Text(withNotes(body, notes))
		}
	}
	if ended != "" {
		pr.stop()
	} else {
		pr.settle()
	}
	body := strings.TrimRight(out.String(), "\n")
	notes = s.recorded(ctx, rs, notes)
	if rs.cwdFile != "" {
		if note := s.learnCwd(ctx, rs.cwdFile, rs.dir); note != "" {
			notes = append(notes, note)
		}
	}
	switch ended {
	case "timeout":
		notes = append(notes, fmt.Sprintf("The command did not finish within its timeout of %d ms and was killed together with every process it started. Give it a longer timeout (at most %d ms) or use run_in_background.",
			rs.timeout.Milliseconds(), MaxTimeout.Milliseconds()))
		return failText(CodeTimedOut, body, notes)
	case "cancel":
		notes = append(notes, "The command was interrupted: the call was cancelled, and the command was killed together with every process it started.")
		return failText(tools.CodeCancelled, body, notes)
	case "shutdown":
		notes = append(notes, "The command was interrupted: the shell tools shut down, and the command was killed together with every process it started.")
		return failText(CodeClosed, body, notes)
	}
	if pr.err != nil {
		notes = append(notes, "Waiting for the shell failed: "+pr.err.Error())
	} else if pr.status.Signal != 0 || pr.status.Code != 0 {
		notes = append([]string{"The command " + describeExit(pr.status) + "."}, notes...)
		if note := s.confine.networkNote(body, true); note != "" {
			notes = append(notes, note)
		}
	}
	if body == "" {
		body = "(no output)"
	}
	return tools.Text(withNotes(body, notes))
}

func failText(code, body string, notes []string) tools.Result {
	if body == "" {
		body = "(no output)"
	}
	return tools.Result{Content: []model.Block{model.TextBlock(withNotes(body, notes))}, IsError: true, Code: code}
}
