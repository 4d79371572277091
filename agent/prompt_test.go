package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
)

// The system prompt's environment lists the directories the leg may write, the admitted
// scratchpad, and — under the open write face — that the list is where to work, not the
// whole of where writes may go.
func TestSystemPromptEnvironment(t *testing.T) {
	t.Parallel()
	system := func(spec agent.TaskSpec) string {
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
		if _, err := agent.New(agent.Deps{Provider: p}).Run(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		return p.Requests()[0].System
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	extra, _ := filepath.EvalSymlinks(t.TempDir())
	scratch := filepath.Join(t.TempDir(), "scratch")
	os.MkdirAll(filepath.Dir(scratch), 0o755)
	s := system(agent.TaskSpec{Prompt: "x", Root: root, AdditionalDirectories: []string{extra}, Scratchpad: scratch})
	for _, want := range []string{"Working directory (task root): " + root, "Additional writable directories: " + extra, "Scratchpad (writable"} {
		if !strings.Contains(s, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "not confined") {
		t.Errorf("roots face: the prompt says writes are not confined:\n%s", s)
	}
	open := system(agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: "bypassPermissions"})
	if !strings.Contains(open, "Writes are not confined to the directories above") {
		t.Errorf("open write face: the prompt does not say the list is a floor:\n%s", open)
	}
}
