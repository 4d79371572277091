package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
)

// walkFailingHost is the host env whose listing of root fails once, when the trigger
// file is there (it removes the trigger as it fails): the walk after the command that
// made the trigger fails, and only that one.
type walkFailingHost struct {
	*env.Host
	root, trigger string
}

func (h walkFailingHost) ReadDir(ctx context.Context, path string) ([]env.DirEntry, error) {
	if path == h.root {
		if _, err := os.Lstat(h.trigger); err == nil {
			os.Remove(h.trigger)
			return nil, &os.PathError{Op: "readdir", Path: path, Err: syscall.EIO}
		}
	}
	return h.Host.ReadDir(ctx, path)
}

// When the walk after an unapproved command fails, a protected entry the command made is
// not taken in as the workspace's state by the next walk: that walk is guarded and puts
// it back. Calibrated: with the walk not failing, the same entry is put back by the walk
// after the command itself.
func TestAFailedWalkDoesNotLetAProtectedWriteStand(t *testing.T) {
	for _, fail := range []bool{false, true} {
		root := filepath.Join(t.TempDir(), "ws")
		must(t, os.MkdirAll(root, 0o755))
		call := func(cmd string) scripted.Turn {
			in, _ := json.Marshal(map[string]string{"command": cmd})
			return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}}
		}
		first := `echo 'export EVIL=1' > .envrc`
		if fail {
			first += ` && touch .fail-walk`
		}
		// The script runs from a file, out of the analysis' sight: the walk is the wall.
		must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte(first+"\n"), 0o644))
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{call("bash run.sh"), call("true"), {Text: "Done."}}})
		rules, err := permission.ParseRules([]string{"Bash"}, nil, nil)
		must(t, err)
		h := walkFailingHost{Host: env.NewHost(), root: root, trigger: filepath.Join(root, ".fail-walk")}
		res, err := agent.New(agent.Deps{Provider: p, Env: h, Store: session.NewMemory(), History: history.NewMemory(),
			Policy: &agent.Policy{Rules: rules}, Shell: &agent.ShellOptions{Sandbox: sandbox.ModeOff}}).
			Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
		must(t, err)
		if res.Status != sema.StatusCompleted {
			t.Fatalf("status %s: %+v", res.Status, res.Error)
		}
		if _, err := os.Lstat(filepath.Join(root, ".fail-walk")); fail && err == nil {
			t.Fatal("the walk after the command did not fail: the case tests nothing")
		}
		if _, err := os.Lstat(filepath.Join(root, ".envrc")); err == nil {
			t.Fatalf("fail=%v: the unapproved .envrc stands; answers: %s", fail, bashAnswer(t, res))
		}
		if !hasDenial(res, "sandbox.protected_reverted") {
			t.Fatalf("fail=%v: the put-back is not in the denials: %+v", fail, res.PermissionDenials)
		}
	}
}
