package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/fence"
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

// The system prompt advertises exactly the scratchpad and memory directories the fence
// admitted — each one a write root — and a directory it refused is neither advertised nor
// writable, and its skip is a notice.
func TestSystemPromptAdvertisesExactlyTheAdmittedDirs(t *testing.T) {
	t.Parallel()
	const (
		scratchLine = "- Scratchpad (writable, for temporary files): "
		memoryLine  = "- Memory directory (writable, for notes that outlive this task): "
	)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	memory := filepath.Join(base, "memory")
	for _, d := range []string{root, memory} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name                    string
		scratchpad, memDir      string
		wantScratch, wantMemory string // the advertised canonical path; "" when refused or not asked
		wantSkips               []string
	}{
		{"both admitted", filepath.Join(base, "scratch"), memory, filepath.Join(base, "scratch"), memory, nil},
		{"scratchpad is the root", root, memory, "", memory, []string{fence.SkipSwallowsRoot}},
		{"memory contains the root", filepath.Join(base, "scratch2"), base, filepath.Join(base, "scratch2"), "", []string{fence.SkipSwallowsRoot}},
		{"memory does not exist", "", filepath.Join(base, "nowhere"), "", "", []string{fence.SkipNotFound}},
		{"both refused", "relative/scratch", root, "", "", []string{fence.SkipNotAbsolute, fence.SkipSwallowsRoot}},
		{"neither asked", "", "", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
			res, err := agent.New(agent.Deps{Provider: p, MemoryDir: tt.memDir}).Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: root, Scratchpad: tt.scratchpad})
			if err != nil {
				t.Fatal(err)
			}
			system := p.Requests()[0].System
			for _, c := range []struct{ line, want string }{{scratchLine, tt.wantScratch}, {memoryLine, tt.wantMemory}} {
				var got []string
				for _, l := range strings.Split(system, "\n") {
					if rest, ok := strings.CutPrefix(l, c.line); ok {
						got = append(got, rest)
					}
				}
				switch {
				case c.want == "" && len(got) > 0:
					t.Errorf("the prompt advertises a refused directory: %q", got)
				case c.want != "" && (len(got) != 1 || got[0] != c.want):
					t.Errorf("the prompt advertises %q, want exactly %q", got, c.want)
				case c.want != "" && !slices.Contains(res.Manifest.WriteRoots, c.want):
					t.Errorf("the advertised %s is not a write root: %v", c.want, res.Manifest.WriteRoots)
				}
			}
			var skips []string
			for _, n := range res.Notices {
				if n.Code == fence.CodeAdvertisedDirSkipped {
					skips = append(skips, n.Detail["reason"].(string))
				}
			}
			if !slices.Equal(skips, tt.wantSkips) {
				t.Errorf("skip notices %v, want %v", skips, tt.wantSkips)
			}
			for _, refused := range []string{tt.scratchpad, tt.memDir} {
				if refused != "" && refused != tt.wantScratch && refused != tt.wantMemory && refused != root && slices.Contains(res.Manifest.WriteRoots, refused) {
					t.Errorf("the refused %s became a write root: %v", refused, res.Manifest.WriteRoots)
				}
			}
		})
	}
}
