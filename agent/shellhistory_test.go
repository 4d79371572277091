package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// A Bash command's changes — an edit in place, a new file, a deletion — are in file
// history like a write tool's, and a rewind restores all three byte for byte.
func TestRewindRestoresWhatBashChanged(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	edit := []byte("alpha\nbeta\n\x00raw\xff bytes\n")
	old := []byte("to be removed\n")
	must(t, os.WriteFile(filepath.Join(root, "edit.txt"), edit, 0o640))
	must(t, os.WriteFile(filepath.Join(root, "old.txt"), old, 0o600))
	cmd := `sed -i 's/beta/BETA/' edit.txt && printf 'fresh\n' > new.txt && rm old.txt`
	in, _ := json.Marshal(map[string]string{"command": cmd})
	model := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}},
		{Text: "Done."},
	}})
	rules, err := permission.ParseRules([]string{"Bash"}, nil, nil)
	must(t, err)
	runner := agent.New(agent.Deps{Provider: model, Store: session.NewMemory(), History: history.NewMemory(), Policy: &agent.Policy{Rules: rules},
		Shell: &agent.ShellOptions{Sandbox: "off"}})
	res, err := runner.Run(context.Background(), agent.TaskSpec{Prompt: "change things", Root: root, PermissionMode: "acceptEdits"})
	must(t, err)
	if !res.Manifest.Shell.InFileHistory || res.Manifest.Shell.HistoryMaxFileSize == 0 || res.Manifest.Shell.HistoryMaxFiles == 0 {
		t.Errorf("manifest shell facts %+v: Bash changes are recorded, with their caps", res.Manifest.Shell)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "new.txt")); string(b) != "fresh\n" {
		t.Fatalf("the command did not run: new.txt %q; notices %+v", b, res.Notices)
	}
	// A person then edits what the command made: the rewind must not destroy that edit
	// without being forced, since the file is no longer what the command left.
	mine := []byte("fresh\nand my line\n")
	must(t, os.WriteFile(filepath.Join(root, "new.txt"), mine, 0o644))
	if _, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true}); err == nil {
		t.Fatal("a rewind overwrote a file a person edited after the command")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "new.txt")); string(b) != string(mine) {
		t.Fatalf("the refused rewind changed new.txt: %q", b)
	}
	must(t, os.WriteFile(filepath.Join(root, "new.txt"), []byte("fresh\n"), 0o644))
	rw, err := runner.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: res.FirstTurn, Files: true})
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(root, "edit.txt")); err != nil || string(b) != string(edit) {
		t.Errorf("edit.txt after the rewind: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "edit.txt")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("edit.txt's mode after the rewind: %v, %v", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "old.txt")); err != nil || string(b) != string(old) {
		t.Errorf("old.txt after the rewind: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt after the rewind: %v, want it gone", err)
	}
	t.Logf("rewind: %+v", rw)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
