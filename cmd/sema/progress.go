package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sema-agent/sema/agent"
)

// statusInterval is the shortest time between two drawings of the status line: often
// enough to look alive, seldom enough to cost nothing on a slow terminal.
const statusInterval = 100 * time.Millisecond

// Escape sequences of the status line: back to the start of the line, erase it.
const eraseLine = "\r\x1b[2K"

// defaultWidth is the width assumed for a terminal whose size cannot be read.
const defaultWidth = 80

// verboseArgWidth bounds the argument shown in a --verbose line.
const verboseArgWidth = 200

// progress shows how a run in the text format goes, on stderr:
//
//   - at a terminal, one status line redrawn in place (at most every statusInterval):
//     the turn, the tool that runs with a short rendering of its argument, the tokens
//     so far and the time since the start; it is erased before anything else is written
//     to stderr (and redrawn after) and for good when the result arrives, so the final
//     text is printed on a clean line;
//   - with --verbose, one permanent line per tool call and one for its outcome, at a
//     terminal or not.
//
// Everything else written to stderr during the run goes through it (Write), so a line
// never lands in the middle of the status line. A write that leaves the cursor mid-line
// — the approval prompt's question — holds the status line back until the run's next
// event, so the question stays as it was asked. Text from the model, a tool or the
// workspace is shown through sanitize: it cannot move the cursor or recolour anything.
//
// A nil *progress is valid: it shows nothing and passes writes through.
type progress struct {
	w       io.Writer
	live    bool // draw the status line: w is a terminal
	verbose bool
	width   int
	now     func() time.Time
	start   time.Time

	mu      sync.Mutex
	started bool // the init event arrived
	root    string
	turn    int
	tokens  int64         // the tokens of the model responses so far, delegated agents' included
	running []runningCall // in the order they started
	agents  map[string]string
	// lastCall is the id of the call whose ● line is the last line written (verbose): its
	// outcome then follows it without repeating the call.
	lastCall string
	shown    bool      // the status line is on the screen
	frame    string    // the status line last drawn
	drawn    time.Time // when it was drawn
	held     bool      // a write left the cursor mid-line: draw nothing until the next event
	done     bool      // the result arrived: draw nothing more

	stopOnce sync.Once
	stopTick chan struct{}
	ticking  sync.WaitGroup
}

// runningCall is a tool call that started and has not answered yet.
type runningCall struct {
	id     string
	status string // Tool: argument, as the status line shows it
	call   string // Tool(argument), as a --verbose line shows it
}

// terminal is implemented by writers that know whether they are a terminal a person
// watches, and how wide it is (tests give a fake one; *os.File is asked directly).
type terminal interface {
	terminalWidth() (width int, ok bool)
}

// terminalOf reports whether w is a terminal that can show a status line, and its width.
// A terminal that cannot move its cursor (TERM=dumb) is not one.
func terminalOf(w io.Writer) (bool, int) {
	if t, ok := w.(terminal); ok {
		width, ok := t.terminalWidth()
		return ok, width
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) || os.Getenv("TERM") == "dumb" {
		return false, 0
	}
	return true, terminalWidth(f)
}

// newProgress returns the progress display of a run printing format to stderr, nil when
// there is nothing to show: a format other than text, or stderr not a terminal without
// --verbose. At a terminal it redraws the status line until stop.
func newProgress(format string, verbose bool, stderr io.Writer) *progress {
	if format != "text" {
		return nil
	}
	live, width := terminalOf(stderr)
	if !live && !verbose {
		return nil
	}
	p := newProgressWith(stderr, live, verbose, width, time.Now)
	p.tick()
	return p
}

// newProgressWith is newProgress with the terminal and the clock given, and no redrawing
// of its own: tests call tick.
func newProgressWith(w io.Writer, live, verbose bool, width int, now func() time.Time) *progress {
	if width <= 0 {
		width = defaultWidth
	}
	return &progress{w: w, live: live, verbose: verbose, width: width, now: now, start: now(),
		agents: map[string]string{}, stopTick: make(chan struct{})}
}

// tick redraws the status line every statusInterval (the elapsed time moves on while
// a tool runs) until stop.
func (p *progress) tick() {
	if p == nil || !p.live {
		return
	}
	p.ticking.Add(1)
	go func() {
		defer p.ticking.Done()
		t := time.NewTicker(statusInterval)
		defer t.Stop()
		for {
			select {
			case <-p.stopTick:
				return
			case <-t.C:
				p.redraw()
			}
		}
	}()
}

// stop ends the redrawing and erases the status line.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() { close(p.stopTick) })
	p.ticking.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.done = true
}

// writer is where the run writes to stderr: the progress display when there is one.
func (p *progress) writer(stderr io.Writer) io.Writer {
	if p == nil {
		return stderr
	}
	return p
}

// Write writes b to stderr on a line of its own: the status line is erased first and
// drawn again after (a write that ends mid-line holds it back until the next event).
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	n, err := p.w.Write(b)
	if len(b) > 0 {
		p.held = b[len(b)-1] != '\n'
		p.lastCall = ""
	}
	p.draw()
	return n, err
}

// event moves the display along with one event of the run.
func (p *progress) event(ev agent.Event) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.held = false
	if ev.ParentToolUseID == "" && ev.Turn > p.turn {
		p.turn = ev.Turn
	}
	switch ev.Type {
	case agent.EventInit:
		p.started = true
		if ev.Manifest != nil {
			p.root = ev.Manifest.Root
		}
	case agent.EventAssistant:
		if r := ev.Response; r != nil {
			u := r.Usage
			p.tokens += u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
		}
	case agent.EventSubagentStart:
		p.agents[ev.Subagent.ToolUseID] = ev.Subagent.Type
	case agent.EventToolUse:
		c := p.callOf(ev)
		p.running = append(p.running, c)
		if p.verbose {
			p.line("● " + c.call)
			p.lastCall = c.id
		}
	case agent.EventToolResult:
		r := ev.ToolResult
		c := runningCall{id: r.ID, call: p.agentPrefix(ev) + r.Name}
		for i, rc := range p.running {
			if rc.id == r.ID {
				c = rc
				p.running = append(p.running[:i:i], p.running[i+1:]...)
				break
			}
		}
		if p.verbose {
			outcome := "ok"
			if exit := commandExit(r); exit != "" {
				outcome = exit
			}
			if r.IsError {
				first, _, _ := strings.Cut(strings.TrimSpace(r.Text), "\n")
				outcome = "error"
				if first = strings.TrimRight(first, "\r"); first != "" {
					outcome += ": " + cut(sanitize(first), verboseArgWidth)
				}
			}
			if p.lastCall != r.ID {
				outcome = c.call + ": " + outcome
			}
			p.line("  ⎿ " + outcome)
		}
	case agent.EventResult:
		p.erase()
		p.done = true
		return
	}
	p.draw()
}

// commandExit is how a shell command that ended badly ended ("exited with code 1",
// "ended by signal 9 (killed)"), "" for any other result. The shell tools report a
// failed command as a result the model reads, not as an error, with the exit on the
// first note after the output (an empty output is "(no output)"); --verbose must not
// call that "ok".
func commandExit(r *agent.ToolResult) string {
	if r.Name != "Bash" && r.Name != "BashOutput" {
		return ""
	}
	i := strings.LastIndex(r.Text, "\n\nThe command exited with code ")
	if j := strings.LastIndex(r.Text, "\n\nThe command ended by signal "); j > i {
		i = j
	}
	if i < 0 {
		return ""
	}
	note, _, _ := strings.Cut(r.Text[i+2:], "\n")
	return strings.TrimSuffix(strings.TrimPrefix(note, "The command "), ".")
}

// line writes one permanent line.
func (p *progress) line(s string) {
	p.erase()
	io.WriteString(p.w, s+"\n")
	p.lastCall = ""
}

// redraw draws the status line if it changed (the clock moved on) and may be drawn.
func (p *progress) redraw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw()
}

// draw draws the status line unless it is on the screen as it is, was drawn less than
// statusInterval ago, or must not be drawn now. A frame it skips is drawn by a later
// call (the ticker's).
func (p *progress) draw() {
	if !p.live || p.done || p.held {
		return
	}
	frame := p.render()
	if p.shown && frame == p.frame {
		return
	}
	now := p.now()
	if !p.drawn.IsZero() && now.Sub(p.drawn) < statusInterval {
		return
	}
	io.WriteString(p.w, eraseLine+frame)
	p.shown, p.frame, p.drawn = true, frame, now
}

// erase removes the status line from the screen.
func (p *progress) erase() {
	if p.shown {
		io.WriteString(p.w, eraseLine)
		p.shown = false
	}
}

// render is the status line: "sema: turn 3 · Bash: go test ./... · 12.3k tokens · 45s",
// cut to the terminal's width (the tool's argument first) so that it never wraps: a
// wrapped line could not be erased in place.
func (p *progress) render() string {
	what := "starting"
	switch n := len(p.running); {
	case n == 1:
		what = p.running[0].status
	case n > 1:
		what = fmt.Sprintf("%s (+%d more)", p.running[n-1].status, n-1)
	case p.started:
		what = "waiting for the model"
	}
	head := "sema: "
	if p.turn > 0 {
		head += fmt.Sprintf("turn %d · ", p.turn)
	}
	tail := " · " + tokenCount(p.tokens) + " · " + elapsed(p.now().Sub(p.start))
	room := p.width - 1 - utf8.RuneCountInString(head+tail)
	if room < 8 {
		room = 8
	}
	return cut(head+cut(what, room)+tail, p.width-1)
}

// callOf describes a tool call for the status line and a --verbose line.
func (p *progress) callOf(ev agent.Event) runningCall {
	u := ev.ToolUse
	prefix := p.agentPrefix(ev)
	arg := callArgument(u.Name, u.Input, p.root)
	c := runningCall{id: u.ID, status: prefix + sanitize(u.Name), call: prefix + sanitize(u.Name)}
	if arg != "" {
		c.status += ": " + arg
		c.call += "(" + cut(arg, verboseArgWidth) + ")"
	}
	return c
}

// agentPrefix names the agent a delegated child's call belongs to: "[explore] ".
func (p *progress) agentPrefix(ev agent.Event) string {
	if ev.ParentToolUseID == "" {
		return ""
	}
	name := p.agents[ev.ParentToolUseID]
	if name == "" {
		name = "agent"
	}
	return "[" + sanitize(name) + "] "
}

// argumentField is the input field that says what a call does, per tool.
var argumentField = map[string]string{
	"Bash": "command", "bash_readonly": "command",
	"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
	"NotebookEdit": "notebook_path",
	"Glob":         "pattern", "Grep": "pattern", "LS": "path",
	"WebFetch": "url", "WebSearch": "query",
	"Task":       "description",
	"BashOutput": "bash_id", "KillShell": "shell_id",
}

// callArgument renders the argument of a call in one short line: the command of a Bash
// call, the path of a file tool (relative to the task root when inside it), the pattern
// of a search. It is "" for a tool without one. Control characters are spelled out.
func callArgument(tool string, input []byte, root string) string {
	field, ok := argumentField[tool]
	if !ok {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	s, _ := m[field].(string)
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if strings.HasSuffix(field, "path") && root != "" && filepath.IsAbs(s) {
		if rel, err := filepath.Rel(root, s); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			s = rel
		}
	}
	first, rest, more := strings.Cut(s, "\n")
	s = sanitize(strings.TrimRight(first, "\r"))
	if more && strings.TrimSpace(rest) != "" {
		s += " …"
	}
	return s
}

// cut shortens s to at most n characters, marking the cut with "…".
func cut(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	if n == 1 {
		return "…"
	}
	return string([]rune(s)[:n-1]) + "…"
}

// tokenCount spells a number of tokens briefly: "850 tokens", "12.3k tokens", "1.2M tokens".
func tokenCount(n int64) string {
	switch {
	case n == 1:
		return "1 token"
	case n < 1000:
		return fmt.Sprintf("%d tokens", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk tokens", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM tokens", float64(n)/1e6)
	}
}

// elapsed spells a duration to the second: "45s", "1m05s", "1h02m".
func elapsed(d time.Duration) string {
	s := int(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
	}
}
