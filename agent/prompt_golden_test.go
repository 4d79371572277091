package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
)

// named is a scripted provider that answers to another provider's name, so the prompt
// is assembled for that provider's family.
type named struct {
	*scripted.Provider
	name string
}

func (n named) Name() string { return n.name }

// TestGoldenSystemPrompt pins the assembled system prompt for each permission mode and
// each provider family, and for the read-only band: a change is a reviewed diff
// (go test ./agent -run Golden -update). The root and the date are placeholders.
func TestGoldenSystemPrompt(t *testing.T) {
	modes := []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModePlan, permission.ModeDontAsk, permission.ModeBypassPermissions}
	type variant struct {
		family   string
		mode     permission.Mode
		readOnly bool
	}
	var variants []variant
	for _, f := range []string{"anthropic", "openai"} {
		for _, m := range modes {
			variants = append(variants, variant{f, m, false})
		}
	}
	variants = append(variants, variant{"anthropic", permission.ModeDefault, true})
	for _, v := range variants {
		name := v.family + "_" + string(v.mode)
		if v.readOnly {
			name += "_readonly"
		}
		t.Run(name, func(t *testing.T) {
			root, _ := filepath.EvalSymlinks(t.TempDir())
			p := named{scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}), v.family}
			// No instruction files: an AGENTS.md of the machine's would be in the prompt
			// (TestGoldenInstructionsPrompt pins that part).
			deps := agent.Deps{Provider: p, Now: func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) },
				Instructions: &agent.InstructionOptions{Off: true}}
			spec := agent.TaskSpec{Prompt: "x", Root: root, PermissionMode: v.mode, ReadOnly: v.readOnly, Sandbox: sandbox.ModeOff}
			res, err := agent.New(deps).Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			system := p.Requests()[0].System
			if res.Manifest.SystemPromptChars != len(system) {
				t.Errorf("the manifest says %d bytes, the prompt is %d", res.Manifest.SystemPromptChars, len(system))
			}
			got := strings.ReplaceAll(strings.ReplaceAll(system, root, "$ROOT"), res.Manifest.Platform, "$PLATFORM")
			path := filepath.Join("testdata", "golden", "prompt_"+name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("the system prompt changed; if intended, run go test ./agent -run Golden -update and review the diff.\ngot:\n%s", got)
			}
		})
	}
}

// The task's SystemPrompt replaces the built-in instructions and the deployment's; the
// mode and the environment are still there.
func TestSystemPromptOverrides(t *testing.T) {
	t.Parallel()
	run := func(deps agent.Deps, spec agent.TaskSpec) string {
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
		deps.Provider = p
		if _, err := agent.New(deps).Run(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		return p.Requests()[0].System
	}
	root := t.TempDir()
	s := run(agent.Deps{SystemPrompt: "DEPLOYMENT RULES"}, agent.TaskSpec{Prompt: "x", Root: root})
	if !strings.HasPrefix(s, "DEPLOYMENT RULES") || strings.Contains(s, "# How to work") || !strings.Contains(s, "# Environment") {
		t.Errorf("deployment prompt:\n%s", s)
	}
	s = run(agent.Deps{SystemPrompt: "DEPLOYMENT RULES"}, agent.TaskSpec{Prompt: "x", Root: root, SystemPrompt: "TASK RULES", AppendSystemPrompt: "APPENDED"})
	if !strings.HasPrefix(s, "TASK RULES") || strings.Contains(s, "DEPLOYMENT") || !strings.HasSuffix(strings.TrimSpace(s), "APPENDED") || !strings.Contains(s, "# Permissions") {
		t.Errorf("task prompt:\n%s", s)
	}
	var _ model.Provider = named{}
}
