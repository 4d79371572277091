package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sema-agent/sema/permission"
)

// Limits of what a question shows of a call's input. A Bash command is never shortened:
// a person must see every byte of what they approve.
const (
	promptMaxLines     = 20  // lines of a Write's content, of each side of an Edit
	promptMaxLineWidth = 200 // characters of one shown line of file content
)

// termApprover puts the permission questions of a run to a person: it writes each
// question to out and reads one answer line from in. It implements permission.Approver.
//
// An answer "a" (always) is remembered for the rest of the process: later questions
// about the same tool — for Bash the same exact command, for a file tool the same
// path — are allowed without asking. A person-only question (the plan gate, the
// safety stations: protected paths, writes outside the roots) is always asked and can
// be allowed only once. The end of the input, an answer that is not one of the offered
// letters, and the cancellation of the run all deny.
//
// Questions are put one at a time (the runner serializes them); Approve is
// nevertheless safe for concurrent use.
type termApprover struct {
	out io.Writer
	// echo repeats each answer after the question when the input is not a terminal (a
	// terminal shows what the person types), so the transcript reads as a dialogue.
	echo bool
	// root resolves relative paths into the keys of remembered answers.
	root string

	start sync.Once
	in    io.Reader
	lines chan answerLine

	mu     sync.Mutex // serializes questions and guards always and ended
	always map[string]bool
	// ended is set once the input has ended: every later question is denied at once
	// instead of waiting for a line that cannot come.
	ended bool
}

// answerLine is one line read from the input, or the error that ended it, with when it
// was read.
type answerLine struct {
	text string
	err  error
	at   time.Time
}

// newTermApprover returns an approver reading answers from in and writing questions to
// out. Nothing is read from in until the first question is put.
func newTermApprover(in io.Reader, out io.Writer, root string) *termApprover {
	return &termApprover{in: in, out: out, echo: !isTerminal(in), root: root, lines: make(chan answerLine), always: map[string]bool{}}
}

// readLines feeds lines to Approve. The channel is unbuffered, so at most one line is
// read ahead of the question that consumes it.
func (a *termApprover) readLines() {
	r := bufio.NewReader(a.in)
	for {
		s, err := r.ReadString('\n')
		if s != "" {
			a.lines <- answerLine{text: s, at: time.Now()}
		}
		if err != nil {
			a.lines <- answerLine{err: err}
			return
		}
	}
}

// Approve implements permission.Approver.
func (a *termApprover) Approve(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := a.rememberKey(req)
	if !req.Ask.PersonOnly && a.always[key] {
		fmt.Fprintf(a.out, "sema: %s allowed (you answered \"always\" earlier)\n", describeCall(req))
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed for this session at the terminal prompt"}, nil
	}
	if !a.echo {
		// At a terminal an answer is to a question the person has seen: what was typed
		// ahead is dropped, here and below, so a second "y" typed while the first call
		// ran does not answer the next question the moment it is printed.
		flushInput(a.in)
	}
	a.ask(req)
	shown := time.Now()
	if a.ended {
		fmt.Fprintln(a.out, "\nsema: no answer (the input ended); denied")
		return deny("no answer was given at the terminal prompt (its input ended)"), nil
	}
	a.start.Do(func() { go a.readLines() })
	var line answerLine
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(a.out, "\nsema: no answer: the run was cancelled; denied")
			return deny("the run was cancelled while the question was open"), nil
		case line = <-a.lines:
		}
		if a.echo || line.err != nil || !line.at.Before(shown) {
			break
		}
		fmt.Fprintf(a.out, "\nsema: %q was typed before this question was shown, and is not its answer: ", sanitize(strings.TrimSpace(line.text)))
	}
	if line.err != nil {
		a.ended = true
		fmt.Fprintln(a.out, "\nsema: no answer (the input ended); denied")
		return deny("no answer was given at the terminal prompt (its input ended)"), nil
	}
	raw := strings.TrimSpace(line.text)
	if a.echo {
		fmt.Fprintln(a.out, sanitize(raw))
	}
	switch strings.ToLower(raw) {
	case "y", "yes":
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed once at the terminal prompt"}, nil
	case "a", "always":
		if req.Ask.PersonOnly {
			fmt.Fprintln(a.out, "sema: this question is asked every time; allowed once")
			return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed once at the terminal prompt"}, nil
		}
		a.always[key] = true
		fmt.Fprintf(a.out, "sema: allowed; %s will not be asked again in this run\n", rememberScope(req, key))
		return permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed for this session at the terminal prompt"}, nil
	case "n", "no":
		return deny("answered no at the terminal prompt"), nil
	default:
		fmt.Fprintf(a.out, "sema: \"%s\" is not an answer (y, a or n); denied\n", sanitize(raw))
		return deny(fmt.Sprintf("the answer \"%s\" at the terminal prompt was not y, a or n", sanitize(raw))), nil
	}
}

func deny(why string) permission.ApprovalDecision {
	return permission.ApprovalDecision{Behavior: permission.Deny, Reason: why}
}

// ask writes one question: the call, its input, the gate's sentence, and the choices.
func (a *termApprover) ask(req permission.ApprovalRequest) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n── permission ── %s\n", describeCall(req))
	if req.Agent != "" {
		fmt.Fprintf(&b, "  asked by the %s agent (a Task call's child)\n", sanitize(req.Agent))
	}
	for _, line := range renderInput(req.Tool, req.Input) {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	if msg := strings.TrimSpace(req.Ask.Reason); msg != "" {
		fmt.Fprintf(&b, "%s", sanitize(msg))
		if req.Ask.DecidedBy != "" {
			fmt.Fprintf(&b, " (reason: %s)", req.Ask.DecidedBy)
		}
		b.WriteString("\n")
	}
	if req.Ask.PersonOnly {
		b.WriteString("Allow? [y]es once / [n]o (asked every time): ")
	} else {
		b.WriteString("Allow? [y]es once / [a]lways for this session / [n]o: ")
	}
	io.WriteString(a.out, b.String())
}

// describeCall names the call in one line: the tool and, where it has one, its target.
func describeCall(req permission.ApprovalRequest) string {
	if field := pathFieldOf(req.Tool); field != "" {
		if p := stringField(req.Input, field); p != "" {
			return req.Tool + " " + sanitize(p)
		}
	}
	return req.Tool
}

// rememberKey is what an "always" answer covers: for Bash the exact command, for a
// file tool the absolute path (relative paths joined to the root, cleaned lexically),
// for any other tool the tool itself.
func (a *termApprover) rememberKey(req permission.ApprovalRequest) string {
	switch {
	case req.Tool == "Bash":
		return "Bash\x00" + stringField(req.Input, "command")
	case pathFieldOf(req.Tool) != "":
		p := stringField(req.Input, pathFieldOf(req.Tool))
		if p != "" && !filepath.IsAbs(p) && a.root != "" {
			p = filepath.Join(a.root, p)
		}
		if p != "" {
			p = filepath.Clean(p)
		}
		return req.Tool + "\x00" + p
	default:
		return req.Tool
	}
}

// rememberScope says in words what an "always" answer covers.
func rememberScope(req permission.ApprovalRequest, key string) string {
	_, target, _ := strings.Cut(key, "\x00")
	switch {
	case req.Tool == "Bash":
		return "this exact command"
	case pathFieldOf(req.Tool) != "" && target != "":
		return req.Tool + " of " + sanitize(target)
	case pathFieldOf(req.Tool) != "":
		return req.Tool + " of the task root"
	default:
		return "every " + req.Tool + " call"
	}
}

// pathFieldOf returns the input field naming a file tool's target, "" for other tools.
func pathFieldOf(tool string) string {
	switch tool {
	case "Read", "Write", "Edit", "MultiEdit":
		return "file_path"
	case "NotebookEdit":
		return "notebook_path"
	case "Glob", "Grep", "LS":
		return "path"
	}
	return ""
}

// renderInput renders a call's input for a person: the command of a Bash call, the
// path and the first lines of a Write, the removed and added lines of an edit, and
// indented JSON for anything else. Every shown character is printable: control
// characters (terminal escape sequences included) are spelled out, so the input cannot
// redraw the question.
func renderInput(tool string, input json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return []string{sanitize(string(input))}
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch tool {
	case "Bash":
		if _, ok := m["command"].(string); ok {
			out := prefixed("$ ", "  ", strings.Split(str("command"), "\n"), 0, 0)
			if d := str("description"); d != "" {
				out = append(out, "# "+sanitize(d))
			}
			if bg, _ := m["run_in_background"].(bool); bg {
				out = append(out, "# runs in the background")
			}
			return out
		}
	case "Write":
		if _, ok := m["content"].(string); ok {
			content := str("content")
			lines := splitLines(content)
			out := []string{fmt.Sprintf("path: %s (%s, %s)", sanitize(str("file_path")), count(len(lines), "line"), count(len(content), "byte"))}
			return append(out, prefixed("│ ", "│ ", lines, promptMaxLines, promptMaxLineWidth)...)
		}
	case "Edit":
		if _, ok := m["old_string"].(string); ok {
			out := []string{"path: " + sanitize(str("file_path"))}
			if all, _ := m["replace_all"].(bool); all {
				out[0] += " (every occurrence)"
			}
			return append(out, editLines(str("old_string"), str("new_string"))...)
		}
	case "MultiEdit":
		if edits, ok := m["edits"].([]any); ok {
			out := []string{fmt.Sprintf("path: %s (%s)", sanitize(str("file_path")), count(len(edits), "edit"))}
			for i, e := range edits {
				em, _ := e.(map[string]any)
				old, _ := em["old_string"].(string)
				repl, _ := em["new_string"].(string)
				out = append(out, fmt.Sprintf("edit %d:", i+1))
				out = append(out, editLines(old, repl)...)
			}
			return out
		}
	case "NotebookEdit":
		if _, ok := m["notebook_path"].(string); ok {
			out := []string{fmt.Sprintf("notebook: %s, cell %s, %s", sanitize(str("notebook_path")), sanitize(str("cell_id")), orWord(str("edit_mode"), "replace"))}
			return append(out, prefixed("│ ", "│ ", splitLines(str("new_source")), promptMaxLines, promptMaxLineWidth)...)
		}
	}
	pretty, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return []string{sanitize(string(input))}
	}
	return prefixed("", "", strings.Split(string(pretty), "\n"), 0, 0)
}

// editLines shows an edit as removed and added lines.
func editLines(old, repl string) []string {
	out := prefixed("- ", "- ", splitLines(old), promptMaxLines, promptMaxLineWidth)
	return append(out, prefixed("+ ", "+ ", splitLines(repl), promptMaxLines, promptMaxLineWidth)...)
}

// prefixed sanitizes lines and prefixes them (first the first line, rest the others),
// keeping at most maxLines lines of at most width characters (0: no limit) and saying
// how much was left out.
func prefixed(first, rest string, lines []string, maxLines, width int) []string {
	var out []string
	for i, l := range lines {
		if maxLines > 0 && i == maxLines {
			out = append(out, fmt.Sprintf("%s… %s more", rest, count(len(lines)-maxLines, "line")))
			break
		}
		l = sanitize(l)
		if width > 0 && utf8.RuneCountInString(l) > width {
			l = string([]rune(l)[:width]) + "…"
		}
		p := rest
		if i == 0 {
			p = first
		}
		out = append(out, p+l)
	}
	return out
}

// splitLines splits file text into lines; a final newline does not make an empty last
// line, and the carriage return of a CRLF line ending is not shown.
func splitLines(s string) []string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// sanitize spells out every control character but the tab (newlines included) and
// every invisible format character (bidirectional overrides, zero-width characters),
// so text from the model cannot move the cursor, recolour or erase the question around
// it, or show a person different text from what runs.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafeRune(r):
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError)
}

func stringField(input json.RawMessage, key string) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// count spells a number of things: "1 line", "3 lines".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
