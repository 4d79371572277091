package tui

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// TestMultiLinePrompt: Alt+Enter and Ctrl-J start a new line of the prompt, a pasted
// text keeps its line breaks, and Enter sends each as one prompt.
func TestMultiLinePrompt(t *testing.T) {
	be := &fakeBackend{}
	h := newHarness(t, Options{Backend: be}, 80, 24)
	h.typeText("first", false)
	h.key(tea.KeyEnter, tea.ModAlt)
	h.typeText("second", false)
	h.key('j', tea.ModCtrl)
	h.typeText("third", false)
	if f := h.frame(); !strings.Contains(f, "› first\n  second\n  third") {
		t.Errorf("the input should show three lines:\n%s", f)
	}
	h.key(tea.KeyEnter, 0)
	h.until("the first leg", func() bool { return be.promptCount() == 1 && h.idle() })

	h.send(tea.PasteMsg{Content: "pasted one\npasted two"})
	h.key(tea.KeyEnter, 0)
	h.until("the second leg", func() bool { return be.promptCount() == 2 && h.idle() })
	if be.prompts[0] != "first\nsecond\nthird" || be.prompts[1] != "pasted one\npasted two" {
		t.Errorf("prompts %q, want each multi-line text as one prompt", be.prompts)
	}
	if f := h.frame(); !strings.Contains(f, "› pasted one\n  pasted two") {
		t.Errorf("the sent prompt should keep its lines:\n%s", f)
	}
}

func readHistoryFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestHistoryWalk: Up recalls this directory's earlier prompts newest first (never
// another directory's), Down walks back to what was typed, and the prompts sent are
// added to the file, which only its owner may read.
func TestHistoryWalk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", HistoryFileName)
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"project":"/other","prompt":"secret elsewhere"}`+"\n"+
		`{"project":"/proj","prompt":"older"}`+"\n"+"torn li"+"\n"+`{"project":"/proj","prompt":"newer"}`+"\n"), 0o600)
	hist, err := OpenHistory(path, "/proj")
	if err != nil {
		t.Fatal(err)
	}
	be := &fakeBackend{}
	h := newHarness(t, Options{Backend: be, History: hist}, 80, 24)
	h.typeText("draft", false)
	h.key(tea.KeyUp, 0)
	if v := h.m.input.Value(); v != "newer" {
		t.Fatalf("Up: input %q, want the newest prompt", v)
	}
	h.key(tea.KeyUp, 0)
	h.key(tea.KeyUp, 0) // the oldest: Up stays on it, never reaching /other's prompt
	if v := h.m.input.Value(); v != "older" {
		t.Fatalf("Up twice more: input %q, want the oldest of this directory", v)
	}
	h.key(tea.KeyDown, 0)
	h.key(tea.KeyDown, 0)
	if v := h.m.input.Value(); v != "draft" {
		t.Fatalf("Down past the newest: input %q, want the draft back", v)
	}
	h.m.input.Reset()
	h.typeText("a new prompt", true)
	h.until("the leg", func() bool { return be.promptCount() == 1 && h.idle() })
	h.key(tea.KeyUp, 0)
	if v := h.m.input.Value(); v != "a new prompt" {
		t.Errorf("Up after sending: input %q, want the prompt just sent", v)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if lines := readHistoryFile(t, path); !strings.Contains(lines[len(lines)-1], `"prompt":"a new prompt"`) ||
		!strings.Contains(lines[len(lines)-1], `"project":"/proj"`) {
		t.Errorf("the file's last line %q, want the prompt sent with its directory", lines[len(lines)-1])
	}
	again, _ := OpenHistory(path, "/proj")
	if got := again.Prompts(); strings.Join(got, "|") != "older|newer|a new prompt" {
		t.Errorf("reopened: %q", got)
	}
}

// TestHistoryCap: the file keeps the newest HistoryCap prompts, and a new file is made
// with mode 0600.
func TestHistoryCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFileName)
	hist, err := OpenHistory(path, "/p")
	if err != nil {
		t.Fatal(err)
	}
	for i := range HistoryCap + 5 {
		if err := hist.Add("prompt " + itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	lines := readHistoryFile(t, path)
	if len(lines) != HistoryCap || !strings.Contains(lines[0], `"prompt 5"`) {
		t.Errorf("%d lines, first %q; want %d from prompt 5", len(lines), lines[0], HistoryCap)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after the rewrite, want 0600", fi.Mode().Perm())
	}
	if err := hist.Add("prompt " + itoa(HistoryCap+4)); err != nil || len(readHistoryFile(t, path)) != HistoryCap {
		t.Errorf("a repeated prompt should not be added again (err %v)", err)
	}
}

// TestHistorySearch: Ctrl-R finds the newest prompt containing what is typed, Ctrl-R
// again an older one, Enter takes it into the input; Esc puts the input back.
func TestHistorySearch(t *testing.T) {
	hist, _ := OpenHistory("", "/p")
	for _, p := range []string{"run the tests", "fix the build", "run the linter"} {
		hist.Add(p)
	}
	h := newHarness(t, Options{Backend: &fakeBackend{}, History: hist}, 80, 24)
	h.typeText("typed", false)
	h.key('r', tea.ModCtrl)
	h.typeText("run", false)
	if f := h.frame(); !strings.Contains(f, "search history: run_ · run the linter") {
		t.Fatalf("the search line should show the newest match:\n%s", f)
	}
	h.key('r', tea.ModCtrl)
	h.key(tea.KeyEnter, 0)
	if v := h.m.input.Value(); v != "run the tests" || h.m.search != nil {
		t.Fatalf("Ctrl-R, Enter: input %q, want the older match", v)
	}
	h.key('r', tea.ModCtrl)
	h.typeText("zzz", false)
	if f := h.frame(); !strings.Contains(f, "no match") {
		t.Errorf("a query nothing matches should say so:\n%s", f)
	}
	h.key(tea.KeyEscape, 0)
	if v := h.m.input.Value(); v != "run the tests" {
		t.Errorf("Esc: input %q, want it as it was before the search", v)
	}
	h.key('r', tea.ModCtrl)
	h.send(tea.PasteMsg{Content: "the b"})
	if f := h.frame(); !strings.Contains(f, "search history: the b_ · fix the build") {
		t.Errorf("a paste should narrow the search:\n%s", f)
	}
}

// TestFirstPromptRemembered: the command line's prompt (sema -i PROMPT) is in the
// history like a typed one.
func TestFirstPromptRemembered(t *testing.T) {
	hist, _ := OpenHistory("", "/p")
	be := &fakeBackend{}
	h := newHarness(t, Options{Backend: be, History: hist, Prompt: "from the command line"}, 80, 24)
	h.until("the leg", func() bool { return be.promptCount() == 1 && h.idle() })
	h.key(tea.KeyUp, 0)
	if v := h.m.input.Value(); v != "from the command line" {
		t.Errorf("Up: input %q, want the command line's prompt", v)
	}
}
