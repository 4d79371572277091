package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/env/envtest"
	"github.com/sema-agent/sema/model/scripted"
)

// edited_files lists the writes that landed: a write that failed after it may have
// changed the file is reported in its own result, not as an edit.
func TestEditedFilesListsOnlyWritesThatLanded(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	faulty := envtest.NewFaulty(env.NewHost())
	faulty.Inject(envtest.PartialWrite(filepath.Join(root, "broken.txt"), 3, syscall.EIO))
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			{Name: "Write", Input: json.RawMessage(`{"file_path":"good.txt","content":"good\n"}`)},
			{Name: "Write", Input: json.RawMessage(`{"file_path":"broken.txt","content":"broken\n"}`)},
		}},
		{Text: "done"},
	}})
	res, err := agent.New(agent.Deps{Provider: model, Env: faulty}).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: root, PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "good.txt")); err != nil {
		t.Fatalf("the good write did not land: %v", err)
	}
	if len(res.EditedFiles) != 1 || res.EditedFiles[0] != filepath.Join(root, "good.txt") {
		t.Fatalf("edited_files %v, want only good.txt", res.EditedFiles)
	}
}
