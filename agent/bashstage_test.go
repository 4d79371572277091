package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/history/treestate"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// killedMidCommand is a session whose process was killed while a shell command ran, as
// the next process finds it: the command's durable snapshot of the root still armed in
// the state directory (from before it changed edit.txt and removed gone.txt), and its
// changes made. It returns the root, the deps that ran the session, the session's first
// leg, and the snapshot's directory.
func killedMidCommand(t *testing.T) (string, agent.Deps, *agent.TaskResult, string) {
	t.Helper()
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	state := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "edit.txt"), []byte("before\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "gone.txt"), []byte("removed by the command\n"), 0o600))
	store, hist := session.NewMemory(), history.NewMemory()
	deps := agent.Deps{Store: store, History: hist, StateDir: state, Shell: &agent.ShellOptions{Sandbox: "off"}}
	deps.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "first"}}})
	first, err := agent.New(deps).Run(ctx, agent.TaskSpec{Prompt: "start", Root: root})
	must(t, err)
	if _, err := hist.MintBoundary(ctx, first.SessionID, first.FirstTurn); err != nil {
		t.Fatal(err)
	}

	// What the killed leg left: its snapshot, armed, and the command's changes.
	stage := filepath.Join(state, "stage", first.SessionID, "killed-leg")
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{root}, StageDir: stage, Durable: true})
	if _, err := tr.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	must(t, tr.Arm([]byte(`{"turn":1}`)))
	must(t, os.WriteFile(filepath.Join(root, "edit.txt"), []byte("half-done\n"), 0o644))
	must(t, os.Remove(filepath.Join(root, "gone.txt")))
	return root, deps, first, stage
}

// A process killed while a shell command ran leaves the command's durable snapshot
// armed in the state directory. The next leg of the session records, before its first
// turn, what the command changed, with the bytes from before it (history.bash_recovered),
// and removes the snapshot; a rewind then restores the files — the edited one with
// --force, since what the cut-off command left there is not known to be the agent's.
func TestNextLegRecordsWhatAKilledCommandChanged(t *testing.T) {
	ctx := context.Background()
	root, deps, first, stage := killedMidCommand(t)
	deps.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "resumed"}}})
	runner := agent.New(deps)
	res, err := runner.Run(ctx, agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: first.SessionID}})
	must(t, err)
	var paths []string
	for _, n := range res.Notices {
		if n.Code == agent.CodeBashRecovered {
			for _, p := range n.Detail["paths"].([]string) {
				paths = append(paths, filepath.Base(p))
			}
		}
	}
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"edit.txt", "gone.txt"}) {
		t.Fatalf("recovered %v; want edit.txt and gone.txt (notices %+v)", paths, res.Notices)
	}
	if _, err := os.Stat(stage); !os.IsNotExist(err) {
		t.Fatalf("the recovered snapshot is still there: %v", err)
	}

	rw, err := runner.Rewind(ctx, agent.RewindSpec{SessionID: first.SessionID, ToTurn: first.FirstTurn, Files: true, Force: true})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(root, "edit.txt")); string(b) != "before\n" {
		t.Errorf("edit.txt after the rewind: %q (%+v)", b, rw.Ledger)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "gone.txt")); string(b) != "removed by the command\n" {
		t.Errorf("gone.txt after the rewind: %q", b)
	}
}

// A snapshot that cannot be read (its index damaged) is never taken for "nothing
// changed": a rewind of the session refuses, naming the snapshot, and changes nothing;
// the snapshot stays for another attempt.
func TestRewindRefusesOverADamagedSnapshot(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	state := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644))
	deps := agent.Deps{Store: session.NewMemory(), History: history.NewMemory(), StateDir: state, Shell: &agent.ShellOptions{Sandbox: "off"},
		Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "first"}}})}
	runner := agent.New(deps)
	first, err := runner.Run(ctx, agent.TaskSpec{Prompt: "start", Root: root})
	must(t, err)
	stage := filepath.Join(state, "stage", first.SessionID, "killed-leg")
	tr := treestate.New(treestate.Config{Env: env.NewHost(), Roots: []string{root}, StageDir: stage, Durable: true})
	if _, err := tr.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	must(t, tr.Arm(nil))
	must(t, os.WriteFile(filepath.Join(stage, "index"), []byte("not an index"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("two\n"), 0o644))

	_, err = runner.Rewind(ctx, agent.RewindSpec{SessionID: first.SessionID, ToTurn: 1, Files: true, Force: true})
	if !sema.IsCode(err, agent.CodeBashRecoveryFailed) {
		t.Fatalf("rewind over a damaged snapshot: %v; want %s", err, agent.CodeBashRecoveryFailed)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "two\n" {
		t.Fatalf("the refused rewind changed a.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(stage, "mark")); err != nil {
		t.Fatalf("the damaged snapshot was removed: %v", err)
	}
}

// A fork of a session whose process was killed while a shell command ran records, before
// it copies the session's file history, what the command changed: a rewind of the fork
// to that turn restores the file the command removed. Calibrated: when only the fork's
// own scope was looked in, the fork's history lacked the command's changes, and its
// rewind left gone.txt missing with no word said.
func TestForkRecordsWhatTheSourcesKilledCommandChanged(t *testing.T) {
	ctx := context.Background()
	root, deps, first, _ := killedMidCommand(t)
	deps.Provider = scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "forked"}}})
	runner := agent.New(deps)
	fork, err := runner.Run(ctx, agent.TaskSpec{Prompt: "go on", Root: root, Resume: &agent.Resume{SessionID: first.SessionID, Fork: true}})
	must(t, err)
	if fork.SessionID == first.SessionID {
		t.Fatal("the fork is the source session")
	}
	rw, err := runner.Rewind(ctx, agent.RewindSpec{SessionID: fork.SessionID, ToTurn: first.FirstTurn, Files: true, Force: true})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(root, "gone.txt")); string(b) != "removed by the command\n" {
		t.Errorf("gone.txt after the fork's rewind: %q (%+v)", b, rw.Ledger)
	}
}
