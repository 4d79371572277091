package tui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
)

// HistoryFileName is the prompt history's file in the state directory.
const HistoryFileName = "prompt-history.jsonl"

// HistoryCap is how many prompts the history file keeps, all directories together; the
// oldest go first.
const HistoryCap = 1000

// historyMaxPrompt is the longest prompt kept: a larger paste is sent but not recorded.
const historyMaxPrompt = 64 << 10

// CodeHistoryUnreadable is the code of OpenHistory's error: the history file exists but
// cannot be read, or its directory cannot be made.
const CodeHistoryUnreadable = "tui.history_unreadable"

// historyLine is one line of the history file.
type historyLine struct {
	Project string `json:"project"`
	Prompt  string `json:"prompt"`
}

// History is the person's prompt history: every prompt sent at a terminal, in one file
// of the state directory, each line naming the directory (the task's root) it was sent
// in. A session offers only its own directory's prompts, as Claude Code does: a
// prompt means something in the project it was written for, and another project's
// prompts (paths, names) would be noise, or leak between projects shown side by side.
// The file is the user's alone (mode 0600): prompts can hold anything.
type History struct {
	path    string
	project string

	mu    sync.Mutex
	lines []historyLine // the whole file, oldest first
	own   []string      // this project's prompts, oldest first
}

// OpenHistory reads the history file path (missing is empty) for the directory project.
// A path of "" keeps the history in memory only.
func OpenHistory(path, project string) (*History, error) {
	h := &History{path: path, project: project}
	if path == "" {
		return h, nil
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, sema.Errorf(CodeHistoryUnreadable, "cannot read the prompt history %s: %v; fix its permissions or remove it", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), historyMaxPrompt*2)
	for sc.Scan() {
		var l historyLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Prompt == "" {
			continue // a torn or foreign line: skipped, not fatal
		}
		h.lines = append(h.lines, l)
	}
	if len(h.lines) > HistoryCap {
		h.lines = h.lines[len(h.lines)-HistoryCap:]
	}
	for _, l := range h.lines {
		if l.Project == project {
			h.own = append(h.own, l.Prompt)
		}
	}
	return h, nil
}

// Prompts returns this directory's prompts, oldest first.
func (h *History) Prompts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.own...)
}

// Add records prompt: appended to the file, which is rewritten without its oldest lines
// once it holds more than HistoryCap. A prompt equal to the previous one is not
// repeated. A write that fails is reported; the prompt stays in memory.
func (h *History) Add(prompt string) error {
	if prompt == "" || len(prompt) > historyMaxPrompt {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.own); n > 0 && h.own[n-1] == prompt {
		return nil
	}
	l := historyLine{Project: h.project, Prompt: prompt}
	h.own = append(h.own, prompt)
	h.lines = append(h.lines, l)
	if h.path == "" {
		return nil
	}
	if len(h.lines) > HistoryCap {
		h.lines = h.lines[len(h.lines)-HistoryCap:]
		return h.rewrite()
	}
	b, _ := json.Marshal(l)
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// rewrite replaces the file with h.lines, through a temporary file and a rename, so a
// crash leaves the old file or the new one.
func (h *History) rewrite() error {
	var buf bytes.Buffer
	for _, l := range h.lines {
		b, _ := json.Marshal(l)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	f, err := os.CreateTemp(filepath.Dir(h.path), ".prompt-history-*")
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if err = errors.Join(err, f.Chmod(0o600), f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), h.path)
}

// histWalk is Up and Down walking the history: on says a walk is under way, pos indexes
// the prompts and draft keeps what was typed before the walk began.
type histWalk struct {
	on    bool
	pos   int
	draft string
}

// histSearch is Ctrl-R's incremental search: the query, the prompt it found (an index,
// -1 for none) and the input as it was, put back on Esc.
type histSearch struct {
	query string
	found int
	saved string
}

// remember records a sent prompt and ends a walk.
func (m *Model) remember(text string) {
	m.walk = histWalk{}
	if m.opts.History == nil {
		return
	}
	if err := m.opts.History.Add(text); err != nil && !m.histFailed {
		m.histFailed = true // said once: the session goes on without a file
		m.add(&entry{kind: entryNotice, text: "the prompt history is not saved: " + err.Error()})
	}
}

// historyUp recalls the previous prompt; false when the cursor is not on the first line
// (Up then moves in the prompt) or there is nothing earlier.
func (m *Model) historyUp() bool {
	if m.opts.History == nil || m.input.Line() != 0 || m.input.LineInfo().RowOffset != 0 {
		return false
	}
	prompts := m.opts.History.Prompts()
	switch {
	case len(prompts) == 0:
		return false
	case !m.walk.on || m.walk.pos > len(prompts):
		m.walk = histWalk{on: true, pos: len(prompts) - 1, draft: m.input.Value()}
	case m.walk.pos == 0:
		return true // the oldest: Up stays
	default:
		m.walk.pos--
	}
	m.input.SetValue(prompts[m.walk.pos])
	return true
}

// historyDown walks back towards the draft; false when not walking or the cursor is not
// on the last line.
func (m *Model) historyDown() bool {
	if !m.walk.on || m.opts.History == nil {
		return false
	}
	if m.input.Line() != m.input.LineCount()-1 {
		return false
	}
	info := m.input.LineInfo()
	if info.RowOffset != info.Height-1 {
		return false
	}
	prompts := m.opts.History.Prompts()
	m.walk.pos++
	if m.walk.pos >= len(prompts) {
		m.input.SetValue(m.walk.draft)
		m.walk = histWalk{}
		return true
	}
	m.input.SetValue(prompts[m.walk.pos])
	return true
}

// searchKey handles a key while Ctrl-R's search is open: typing narrows it, Ctrl-R
// finds the next older match, Enter or Tab takes the match into the input (to edit or
// send), Esc, Ctrl-G or Ctrl-C put the input back as it was.
func (m *Model) searchKey(k string, text string) {
	s := m.search
	switch k {
	case "ctrl+r":
		s.found = m.findPrompt(s.query, s.found-1)
	case "enter", "tab":
		if s.found >= 0 {
			m.input.SetValue(m.opts.History.Prompts()[s.found])
		}
		m.search = nil
	case "esc", "ctrl+g", "ctrl+c":
		m.input.SetValue(s.saved)
		m.search = nil
	case "backspace":
		if s.query != "" {
			r := []rune(s.query)
			s.query = string(r[:len(r)-1])
			s.found = m.findPrompt(s.query, -1)
		}
	default:
		if text != "" && !strings.ContainsAny(text, "\r\n") {
			s.query += text
			s.found = m.findPrompt(s.query, -1)
		}
	}
}

// findPrompt is the index of the newest prompt before index before (-1: from the
// newest) that contains query, ignoring case; -1 when none does.
func (m *Model) findPrompt(query string, before int) int {
	prompts := m.opts.History.Prompts()
	if before < 0 || before > len(prompts) {
		before = len(prompts)
	}
	q := strings.ToLower(query)
	for i := before - 1; i >= 0; i-- {
		if strings.Contains(strings.ToLower(prompts[i]), q) {
			return i
		}
	}
	return -1
}

// searchLine is the search's line under the input.
func (m *Model) searchLine() string {
	s := m.search
	match := "no match"
	if s.found >= 0 {
		match = sanitize(firstLine(m.opts.History.Prompts()[s.found]))
	}
	return m.styles.dim.Render("  search history: "+sanitize(s.query)+"_ · ") + match
}
