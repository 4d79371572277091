package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
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
}

func newPrinter(format string, out, errw io.Writer) *printer {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return &printer{format: format, out: out, errw: errw, enc: enc, agents: map[string]string{}}
}

func (p *printer) event(ev agent.Event) {
	// First: the result's event erases the status line before the answer is printed.
	p.progress.event(ev)
	switch p.format {
	case "stream-json":
		if obj := streamObject(ev); obj != nil {
			p.enc.Encode(obj)
		}
	case "json":
		if ev.Type == agent.EventResult {
			p.enc.Encode(resultObject(ev.Result))
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
			fmt.Fprintf(p.errw, "sema: waiting for approval of %s (%s)%s\n  answer with: sema approve %s --checkpoint %s --allow|--deny\n",
				terminalText(cp.Tool), terminalText(cp.Message), by, r.SessionID, cp.ID)
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

// streamObject is the stream-json line of ev; a result also names the command that
// continues its session.
func streamObject(ev agent.Event) any {
	if ev.Type == agent.EventResult {
		return resultObject(ev.Result)
	}
	return streamjson.Event(ev)
}

// resultObject is the result object of --output-format json and stream-json.
func resultObject(r *agent.TaskResult) map[string]any {
	obj := streamjson.Result(r)
	if (r.Status == sema.StatusError || r.Status == sema.StatusCancelled) && r.SessionID != "" {
		// The command that continues the session; the session keeps every finished turn.
		obj["continue_with"] = continueCommand(context.Background(), r.SessionID, r.Manifest.Root)
	}
	return obj
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
