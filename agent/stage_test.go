package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
)

// The change recorder stages pre-images in the shell's scratch directory, which confined
// commands may read for the co-author hooks and the git configuration; the stage itself
// is hidden from them. Calibrated: without the sandbox the same command finds the staged
// bytes.
func TestStagedPreImagesAreHiddenFromCommands(t *testing.T) {
	for _, mode := range sandboxModes(t) {
		t.Run(string(mode), func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			must(t, err)
			t.Setenv("TMPDIR", base) // the shell's scratch directory is made here
			root := filepath.Join(t.TempDir(), "ws")
			must(t, os.MkdirAll(root, 0o755))
			must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644))
			call := func(cmd string) scripted.Turn {
				in, _ := json.Marshal(map[string]string{"command": cmd})
				return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Bash", Input: in}}}
			}
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{
				// The stage then holds a.txt's bytes, the pre-image of the next command.
				call(`echo "STAGED-PRE""IMAGE" > a.txt; echo "STAGED-PRE""IMAGE" > "$TMPDIR/readable.txt"`),
				// The pattern is split so the command's own text never matches it.
				// The rest of the scratch directory stays readable: the search finds the
				// marker the first command left in its temp dir (in the scratch directory
				// when confined), so a search that reached nothing fails.
				call(`grep -r "STAGED-PRE""IMAGE" ` + base + ` 2>/dev/null; echo searched`),
				{Text: "Done."},
			}})
			// A person says yes to both calls (the search reads outside the roots, which
			// only a person may allow): the kernel is the only wall left.
			yes := permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
				return permission.ApprovalDecision{Behavior: permission.Allow}, nil
			})
			res, err := agent.New(agent.Deps{Provider: p, Store: session.NewMemory(), History: history.NewMemory(),
				Approver: yes, Shell: &agent.ShellOptions{Sandbox: mode}}).
				Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
			must(t, err)
			if res.Status != sema.StatusCompleted {
				t.Fatalf("status %s: %+v", res.Status, res.Error)
			}
			out := bashAnswer(t, res)
			if !strings.Contains(out, "readable.txt:STAGED-PREIMAGE") {
				t.Fatalf("the search did not reach the readable part of the scratch directory: %q", out)
			}
			if !strings.Contains(out, "searched") {
				t.Fatalf("the search did not run: %q", out)
			}
			found := strings.Contains(out, "history-stage") && strings.Contains(out, "STAGED-PREIMAGE")
			if mode == sandbox.ModeOff && !found {
				t.Fatalf("calibration: unconfined, the staged pre-image was not found: %q", out)
			}
			if mode != sandbox.ModeOff && found {
				t.Fatalf("a confined command read the staged pre-image: %q", out)
			}
		})
	}
}
