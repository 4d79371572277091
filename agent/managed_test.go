package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/settings"
)

func managed(t *testing.T, doc string) *settings.File {
	t.Helper()
	f, err := settings.Parse([]byte(doc), "/etc/sema/managed-settings.json", settings.Managed)
	if err != nil {
		t.Fatal(err)
	}
	return &f
}

// managedRoot is a trusted workspace whose own settings try to loosen what the policy
// says.
func managedRoot(t *testing.T, project string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if project != "" {
		if err := os.MkdirAll(filepath.Join(root, ".sema"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, ".sema/settings.json"), []byte(project), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The managed policy's deny rule holds against a trusted project's allow, the task's
// allow and bypassPermissions.
func TestManagedDenyHolds(t *testing.T) {
	t.Parallel()
	root := managedRoot(t, `{"permissions": {"allow": ["Write"], "defaultMode": "bypassPermissions"}}`)
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("locked.txt", "x"), write("free.txt", "y")}}, {Text: "done"}}})
	r := agent.New(agent.Deps{Provider: p, Settings: &agent.SettingsOptions{Managed: managed(t, `{"permissions": {"deny": ["Write(locked.txt)"]}}`)},
		Policy: &agent.Policy{TrustProjectSettings: true}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeBypassPermissions, AllowedTools: []string{"Write(locked.txt)"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "locked.txt")); err == nil {
		t.Fatal("the managed deny rule was loosened")
	}
	if _, err := os.Stat(filepath.Join(root, "free.txt")); err != nil {
		t.Fatalf("calibration: the write the policy does not forbid did not land: %v", err)
	}
	if len(res.PermissionDenials) != 1 {
		t.Fatalf("denials %+v", res.PermissionDenials)
	}
}

// The managed policy's disableBypassPermissionsMode turns a bypass request into default.
func TestManagedDisablesBypass(t *testing.T) {
	t.Parallel()
	root := managedRoot(t, "")
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("a.txt", "x")}}, {Text: "done"}}})
	r := agent.New(agent.Deps{Provider: p, Settings: &agent.SettingsOptions{Managed: managed(t, `{"permissions": {"disableBypassPermissionsMode": "disable"}}`)}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeBypassPermissions, OnAsk: agent.OnAskDeny})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a.txt")); err == nil {
		t.Fatal("bypassPermissions ran although the managed policy disables it")
	}
	if m := res.Manifest.Mode; m.Requested != "bypassPermissions" || m.Effective != "default" || m.FoldedBy == "" {
		t.Fatalf("manifest mode %+v", m)
	}
}

// A task may not loosen the managed policy's sandbox.
func TestManagedSandboxCannotBeLoosened(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "never"}}})
	r := agent.New(agent.Deps{Provider: p, Settings: &agent.SettingsOptions{Managed: managed(t, `{"sandbox": {"enabled": true}}`)}})
	_, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: managedRoot(t, ""), Sandbox: "off"})
	var e *sema.Error
	if !errors.As(err, &e) || e.Code != sandbox.CodeLoosened {
		t.Fatalf("err = %v, want %s", err, sandbox.CodeLoosened)
	}
}

// allowManagedHooksOnly: a trusted project's hooks do not run; the policy's do.
func TestManagedHooksOnly(t *testing.T) {
	t.Parallel()
	root := managedRoot(t, `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch project-hook-ran"}]}]}}`)
	policy := `{"allowManagedHooksOnly": true, "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch managed-hook-ran"}]}]}}`
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})
	r := agent.New(agent.Deps{Provider: p, Settings: &agent.SettingsOptions{Managed: managed(t, policy)}, Policy: &agent.Policy{TrustProjectSettings: true}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	if _, err := os.Stat(filepath.Join(root, "managed-hook-ran")); err != nil {
		t.Fatalf("the managed hook did not run: %v (notices %+v)", err, res.Notices)
	}
	if _, err := os.Stat(filepath.Join(root, "project-hook-ran")); err == nil {
		t.Fatal("a project hook ran under allowManagedHooksOnly")
	}
}
