package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/streamjson"
)

// printer writes a run's events in one of the output formats.
type printer struct {
	format string
	out    io.Writer
	errw   io.Writer
	enc    *json.Encoder
	// agents names the agent type of each running Task call, for the text format.
	agents map[string]string
	// progress is the text format's status line and --verbose lines; nil for none.
	progress *progress
	// started is when the run started, for the result's duration_ms.
	started time.Time
}

func newPrinter(format string, out, errw io.Writer) *printer {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return &printer{format: format, out: out, errw: errw, enc: enc, agents: map[string]string{}, started: time.Now()}
}

func (p *printer) event(ev agent.Event) {
	ev = cliEvent(ev)
	// First: the result's event erases the status line before the answer is printed.
	p.progress.event(ev)
	switch p.format {
	case "stream-json":
		if ev.Type == agent.EventResult {
			p.enc.Encode(resultObject(ev.Result, time.Since(p.started)))
		} else if obj := streamjson.Event(ev); obj != nil {
			p.enc.Encode(obj)
		}
	case "json":
		if ev.Type == agent.EventResult {
			p.enc.Encode(resultObject(ev.Result, time.Since(p.started)))
		}
	default:
		p.text(ev)
	}
}

// text prints the final answer on stdout and notices and failures on stderr, so that
// `sema -p … > answer.txt` captures only the answer. Every text that came from the model,
// a tool or the workspace is spelled through terminalText: an escape sequence in a file
// name or an answer must not drive the terminal it is printed on.
func (p *printer) text(ev agent.Event) {
	who := "sema"
	if ev.ParentToolUseID != "" {
		name := p.agents[ev.ParentToolUseID]
		if name == "" {
			name = "agent" // an event from before the child's start was announced
		}
		who = "sema[" + terminalText(name) + "]"
	}
	switch ev.Type {
	case agent.EventNotice:
		fmt.Fprintf(p.errw, "%s: notice: %s (%s)\n", who, terminalText(ev.Notice.Message), terminalText(ev.Notice.Code))
	case agent.EventPermission:
		// Questions are not printed: a person at the prompt saw theirs, and a refusal
		// that followed one is printed as its denial.
		if ev.Denial != nil {
			fmt.Fprintf(p.errw, "%s: denied %s: %s\n", who, terminalText(ev.Denial.Tool), terminalText(ev.Denial.Reason))
		}
	case agent.EventSubagentStart:
		s := ev.Subagent
		p.agents[s.ToolUseID] = s.Type
		fmt.Fprintf(p.errw, "%s: agent %s started: %s\n", who, terminalText(s.Type), terminalText(s.Description))
	case agent.EventSubagentEnd:
		s := ev.Subagent
		fmt.Fprintf(p.errw, "%s: agent %s %s after %d turns (%s)\n", who, terminalText(s.Type), s.Status, s.NumTurns, terminalText(s.Description))
	case agent.EventTodos:
		fmt.Fprint(p.errw, todoLines(who, ev.Todos))
	case agent.EventResult:
		r := ev.Result
		if r.Result != "" {
			fmt.Fprintln(p.out, terminalText(strings.TrimRight(r.Result, "\n")))
		}
		if cp, parked := r.Parked(); parked {
			by := ""
			for s := cp.Subagent; s != nil; s = s.Nested {
				by += fmt.Sprintf(" asked by the %s agent (session %s)", terminalText(s.Type), s.SessionID)
			}
			answers := "--allow|--deny"
			if cp.Gate == permission.GateBudget {
				// A budget question is allowed only with a higher limit.
				answers = "--allow --max-tokens-total N (a dollar budget: --max-budget-usd USD), or --deny"
			}
			fmt.Fprintf(p.errw, "sema: waiting for approval of %s (%s)%s\n  answer with: sema approve %s --checkpoint %s %s\n",
				terminalText(cp.Tool), terminalText(cp.Message), by, r.SessionID, cp.ID, answers)
		}
		if a := r.Answered; a != nil && (r.Status == sema.StatusError || r.Status == sema.StatusCancelled) {
			// The leg failed after the answered call: say that the call did run, so
			// nobody answers again or repeats by hand what is already done.
			fmt.Fprintf(p.errw, "sema: %s\n", answeredLine(a))
		}
		if r.Status == sema.StatusMaxTurns {
			fmt.Fprintf(p.errw, "sema: stopped after %d turns (--max-turns)\n", r.NumTurns)
		}
		if r.Status == sema.StatusBudgetExceeded {
			fmt.Fprintf(p.errw, "sema: stopped after %d turns, before passing the budget (--max-budget-usd, --max-tokens-total)\n", r.NumTurns)
		}
	}
}

// todoMarks are the text format's marks of the todo statuses.
var todoMarks = map[agent.TodoStatus]string{agent.TodoPending: "☐", agent.TodoInProgress: "◐", agent.TodoCompleted: "☑"}

// todoLines prints a todo list compactly: a heading with the count done, then one line
// an item, the item in progress as it happens (its activeForm).
func todoLines(who string, list []agent.Todo) string {
	done := 0
	for _, td := range list {
		if td.Status == agent.TodoCompleted {
			done++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: todos (%d/%d done)\n", who, done, len(list))
	for _, td := range list {
		text := td.Content
		if td.Status == agent.TodoInProgress && td.ActiveForm != "" {
			text = td.ActiveForm
		}
		fmt.Fprintf(&b, "  %s %s\n", todoMarks[td.Status], terminalText(firstLine(text, 200)))
	}
	return b.String()
}

// answeredLine says what became of the call a person answered.
func answeredLine(a *agent.AnsweredCall) string {
	text := firstLine(a.Text, 200)
	switch {
	case !a.Allowed:
		return fmt.Sprintf("the %s call was denied as answered and did not run; the model was told: %s", a.Tool, text)
	case a.IsError:
		return fmt.Sprintf("the approved %s call ran and failed (%s): %s", a.Tool, a.Code, text)
	default:
		return fmt.Sprintf("the approved %s call ran: %s", a.Tool, text)
	}
}

// terminalText is s with every control character but the newline and the tab spelled
// out (\x1b, \r, \u202e…), as sanitize does for the approval prompt: the text keeps its
// lines, and nothing in it can move the cursor, recolour, erase or reorder what is shown.
func terminalText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = sanitize(l)
	}
	return strings.Join(lines, "\n")
}

// wireBlocks is streamjson.Blocks: the content blocks of the JSON output.
func wireBlocks(bs []model.Block) []streamjson.Block { return streamjson.Blocks(bs) }

// resultObject is the result object of --output-format json and stream-json: Claude
// Code's fields (claudeResult), with sema's own beside them; a failed run's also names
// the command that continues its session. elapsed is the run's wall time.
func resultObject(r *agent.TaskResult, elapsed time.Duration) map[string]any {
	obj := streamjson.Result(r)
	maps.Copy(obj, claudeResult(r, elapsed))
	if (r.Status == sema.StatusError || r.Status == sema.StatusCancelled) && r.SessionID != "" {
		// The command that continues the session; the session keeps every finished turn.
		obj["continue_with"] = continueCommand(context.Background(), r.SessionID, r.Manifest.Root)
	}
	return obj
}

// claudeOutcome is Claude Code's subtype and is_error for a result's status, with the
// errors list its failed results carry.
func claudeOutcome(r *agent.TaskResult) (subtype string, isError bool, errs []string) {
	switch r.Status {
	case sema.StatusCompleted:
		return "success", false, nil
	case sema.StatusMaxTurns:
		return "error_max_turns", true, []string{fmt.Sprintf("stopped after %d turns (max turns)", r.NumTurns)}
	case sema.StatusBudgetExceeded:
		return "error_max_budget_usd", true, []string{"stopped before passing the budget"}
	case sema.StatusAwaitingApproval:
		// A parked question (--on-ask park): the run ended waiting for `sema approve`.
		return "error_during_execution", true, []string{"awaiting approval: answer with sema approve " + r.SessionID}
	}
	msg := string(r.Status)
	if r.Error != nil {
		msg = r.Error.Message
	}
	return "error_during_execution", true, []string{msg}
}

// claudeResult are the fields of Claude Code's result message for r: a program written
// against `claude -p --output-format json` reads sema's result unchanged. Where sema
// has a field of the same name (usage, permission_denials) Claude Code's shape is kept
// and sema's members stay beside its own.
func claudeResult(r *agent.TaskResult, elapsed time.Duration) map[string]any {
	subtype, isError, errs := claudeOutcome(r)
	m := map[string]any{
		"subtype": subtype, "is_error": isError,
		"duration_ms": elapsed.Milliseconds(), "duration_api_ms": r.DurationAPI.Milliseconds(),
		"num_turns": r.NumTurns, "session_id": r.SessionID, "total_cost_usd": r.TotalCostUSD,
		"usage": wireUsage(r.Usage), "permission_denials": claudeDenials(r.PermissionDenials),
	}
	if isError {
		m["errors"] = errs
	}
	return m
}

// claudeDenials are the denials as Claude Code spells them (tool_name, tool_use_id,
// tool_input), with sema's tool, input, reason, code and subagent beside them.
func claudeDenials(ds []agent.PermissionDenial) []map[string]any {
	out := make([]map[string]any, 0, len(ds))
	for _, d := range ds {
		m := map[string]any{"tool_name": d.Tool, "tool_use_id": d.ToolUseID, "tool_input": d.Input,
			"tool": d.Tool, "input": d.Input, "reason": d.Reason, "code": d.Code}
		if d.Subagent != nil {
			m["subagent"] = d.Subagent
		}
		out = append(out, m)
	}
	return out
}

// refusalResult is the result object of a command line refused before any run: the
// fields every result has, zero, with the refusal's error.
func refusalResult(se *sema.Error) map[string]any {
	return map[string]any{
		"type": "result", "subtype": "error_during_execution", "is_error": true,
		"duration_ms": 0, "duration_api_ms": 0, "num_turns": 0, "session_id": "", "result": "",
		"total_cost_usd": 0, "usage": wireUsage(model.Usage{}), "permission_denials": []any{},
		"errors": []string{se.Message}, "status": sema.StatusError, "error": se,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// orEmptyObject is b, or {} when b is empty or not JSON: a tool input on the wire is
// always an object.
func orEmptyObject(b []byte) []byte {
	if len(b) == 0 || !json.Valid(b) {
		return []byte("{}")
	}
	return b
}
