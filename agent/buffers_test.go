package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// unsavedEditor holds one unsaved buffer; a write saves the text to the disk, as an
// editor does.
type unsavedEditor struct {
	mu     sync.Mutex
	path   string
	buffer string
	writes []string
}

func (e *unsavedEditor) ReadText(_ context.Context, path string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if path == e.path {
		return e.buffer, nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

func (e *unsavedEditor) WriteText(_ context.Context, path, text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writes = append(e.writes, text)
	if path == e.path {
		e.buffer = text
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// Deps.Buffers reaches Read and the write lane: the model edits the editor's unsaved
// text, the editor is handed the result, and file history records the write so a
// rewind puts the disk back as it was before the run.
func TestDepsBuffersEditTheEditorsTextAndRewind(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "main.go")
	if err := os.WriteFile(p, []byte("package main // helo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := &unsavedEditor{path: p, buffer: "package main // helo, unsaved\n"}
	store, hist := session.NewMemory(), history.NewMemory()
	provider := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{ID: "r", Name: "Read", Input: json.RawMessage(`{"file_path":"main.go"}`)}}},
		{ToolCalls: []scripted.ToolCall{{ID: "e", Name: "Edit", Input: json.RawMessage(`{"file_path":"main.go","old_string":"helo","new_string":"hello"}`)}}},
		{Text: "Fixed."},
	}})
	runner := agent.New(agent.Deps{Provider: provider, Store: store, History: hist, Buffers: ed})
	res, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "fix the typo", Root: root, PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Error)
	}
	if len(ed.writes) != 1 || ed.writes[0] != "package main // hello, unsaved\n" {
		t.Fatalf("the editor was handed %q, want the edit of its buffer", ed.writes)
	}
	if _, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true}); err != nil {
		t.Fatalf("rewind: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "package main // helo\n" {
		t.Fatalf("after the rewind the file holds %q, want the disk's text before the run", b)
	}
}

// askedEditor fails the test when the file tools ask it anything.
type askedEditor struct{ t *testing.T }

func (e askedEditor) ReadText(_ context.Context, path string) (string, error) {
	e.t.Errorf("the editor was asked for %s", path)
	return "", errors.New("asked")
}

func (e askedEditor) WriteText(_ context.Context, path, _ string) error {
	e.t.Errorf("the editor was asked to write %s", path)
	return errors.New("asked")
}

// A path a deny rule keeps from the model never reaches the editor, for a read or a
// write.
func TestDepsBuffersNeverSeeADeniedPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "secrets", "key.txt"), []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runSeats(t, agent.Deps{Buffers: askedEditor{t}},
		agent.TaskSpec{Prompt: "peek", Root: root, PermissionMode: "bypassPermissions",
			DisallowedTools: []string{"Read(./secrets/**)", "Edit(./secrets/**)"}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{
			{ID: "r", Name: "Read", Input: json.RawMessage(`{"file_path":"secrets/key.txt"}`)},
			{ID: "w", Name: "Write", Input: json.RawMessage(`{"file_path":"secrets/new.txt","content":"x"}`)},
		}},
		scripted.Turn{Text: "done"})
	if len(got.results) != 2 || !got.results[0].IsError || !got.results[1].IsError {
		t.Fatalf("results %+v, want both calls refused", got.results)
	}
}
