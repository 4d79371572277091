package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/subagent"
)

// richBackend is a fake back-end that offers every optional command.
type richBackend struct {
	*fakeBackend
	models []string
}

func (r *richBackend) SetModel(_ context.Context, ref string) (string, error) {
	if ref == "nope" {
		return "", errors.New("no such model")
	}
	r.models = append(r.models, ref)
	return "resolved-" + ref, nil
}

func (r *richBackend) Compact(context.Context, string) (*agent.CompactionInfo, error) {
	return &agent.CompactionInfo{Kind: "summary", Reason: "manual", TokensBefore: 120_000, TokensAfter: 8_000}, nil
}

func (r *richBackend) Permissions(context.Context) (*agent.PermissionReport, error) {
	return &agent.PermissionReport{Mode: permission.ModeDefault, Rules: []agent.RuleSource{
		{Rule: "Bash(rm *)", Behavior: permission.Deny, Origin: agent.OriginSettings, Layer: "user", Path: "/home/p/.sema/settings.json", Applied: true},
		{Rule: "Read", Behavior: permission.Allow, Origin: agent.OriginTaskAllowed, Applied: true},
	}}, nil
}

func (r *richBackend) Agents(context.Context) ([]subagent.Definition, error) {
	return []subagent.Definition{{Name: "general-purpose", Description: "General work.\nMore."}, {Name: "reviewer", Description: "Reviews."}}, errors.New("bad.md has no front matter")
}

func (r *richBackend) Commands() []*commands.Command {
	return []*commands.Command{{Name: "review", Description: "Review a file", Scope: commands.ScopeProject}}
}

// legEvents is a leg that starts, reports its facts and holds until released.
func legEvents() []step {
	manifest := &agent.Manifest{Model: "claude-sonnet-4-5", Mode: agent.ModeReceipt{Effective: "default"},
		MCPServers: []mcp.ServerStatus{{Name: "docs", Type: "stdio", Source: "project", State: "connected", Tools: []string{"a", "b"}},
			{Name: "db", Type: "http", Source: "user", State: "failed", Error: "connection refused"}},
		Shell: agent.ShellFacts{FullShell: true, Sandbox: sandbox.Status{Enforced: true, Mode: "auto", Landlock: 4,
			Reason: "no mount namespace", Confines: []string{"filesystem", "network"}, NotConfined: []string{"time"}}}}
	return []step{
		ev(agent.Event{Type: agent.EventInit, Manifest: manifest}),
		ev(agent.Event{Type: agent.EventAssistant, Message: &model.Message{Role: model.RoleAssistant},
			Response: &model.Response{Model: "claude-sonnet-4-5", Usage: model.Usage{InputTokens: 10_000, CacheReadTokens: 40_000, OutputTokens: 100}}}),
		ev(agent.Event{Type: agent.EventTodos, Todos: []agent.Todo{{Content: "Run the tests", Status: agent.TodoCompleted}, {Content: "Fix the bug", Status: agent.TodoInProgress}}}),
		toolUse("t1", "Bash", `{"command":"go run ./server","run_in_background":true}`),
		toolResult("t1", "Bash", false, ""),
		toolUse("t2", "Bash", `{"command":"sleep 100","run_in_background":true}`),
		toolResult("t2", "Bash", false, ""),
		toolUse("t3", "KillShell", `{"shell_id":"bash_2"}`),
		toolResult("t3", "KillShell", false, ""),
		{hold: true},
		result(0.01),
	}
}

// TestCommandsReadTheEvents: /context, /todos, /sandbox and /mcp report what the leg's
// events said, and the status line shows the context fill and the background tasks.
func TestCommandsReadTheEvents(t *testing.T) {
	be := &fakeBackend{legs: [][]step{legEvents()}, release: make(chan struct{})}
	h := newHarness(t, Options{Backend: be, Model: "claude-sonnet-4-5"}, 80, 24)
	for _, c := range []string{"/context", "/todos", "/sandbox", "/mcp"} {
		h.typeText(c, true)
	}
	f := h.frame()
	for _, want := range []string{"context: no request yet", "no todo list", "sandbox: known once the first turn starts", "mcp: known once"} {
		if !strings.Contains(f, want) {
			t.Errorf("before any leg, %q missing:\n%s", want, f)
		}
	}
	h.typeText("go", true)
	h.until("the KillShell's answer", func() bool { e := h.m.tools["t3"]; return e != nil && e.done })
	status := strings.Split(strings.TrimRight(h.frame(), "\n"), "\n")[23]
	if !strings.Contains(status, "ctx 25% · 1 bg · $0.00") || h.m.facts.running != 1 {
		t.Errorf("status line %q, want ctx 25%%, 1 bg and the cost", status)
	}
	h.typeText("/context", true)
	h.golden("context")
	for _, c := range []string{"/todos", "/sandbox", "/mcp"} {
		h.typeText(c, true)
	}
	h.m.height = 60
	f = h.frame()
	for _, want := range []string{
		"the last request was 50.0k tokens of a 200.0k window (25%);",
		"[x] Run the tests", "[~] Fix the bug",
		"sandbox partial: the kernel confines every command (mode auto)", "why: no mount namespace", "confines: filesystem, network", "not confined on any kernel: time",
		"docs (stdio, project): connected, 2 tools", "db (http, user): failed — connection refused",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("%q missing:\n%s", want, f)
		}
	}
	if want := "context: the last request was 50.0k tokens of a 200.0k window (25%); the conversation is compacted at 85%"; h.m.contextText() != want {
		t.Errorf("/context says %q, want %q", h.m.contextText(), want)
	}
	be.release <- struct{}{}
	h.until("the leg's end", h.idle)
	if h.m.facts.running != 0 {
		t.Errorf("%d background tasks after the leg stopped them", h.m.facts.running)
	}
}

// refusing refuses every mode change; inForce is the mode it says is in force.
type refusing struct {
	*fakeBackend
	inForce permission.Mode
}

func (r refusing) SetMode(context.Context, permission.Mode) (permission.Mode, error) {
	return r.inForce, errors.New("the auto classifier could not be armed")
}

// TestRefusedModeShowsTheModeInForce: the status line does not keep a mode the back-end
// refused: it shows the one the back-end says is in force, else the one before.
func TestRefusedModeShowsTheModeInForce(t *testing.T) {
	for _, tc := range []struct {
		inForce, want permission.Mode
	}{{permission.ModePlan, permission.ModePlan}, {"", permission.ModeDefault}} {
		h := newHarness(t, Options{Backend: refusing{&fakeBackend{}, tc.inForce}}, 80, 24)
		h.typeText("/mode auto", true)
		h.until("the refusal", func() bool { return strings.Contains(h.frame(), "the mode did not change") })
		if h.m.mode != tc.want || !strings.Contains(h.frame(), "mode: "+string(tc.want)+" ·") {
			t.Errorf("in force %q: the status line says %q, want %q:\n%s", tc.inForce, h.m.mode, tc.want, h.frame())
		}
	}
}

// TestInitAndCustomCommandsArePrompts: /init sends its fixed instruction, labelled; a
// custom command goes to the back-end as typed, to be expanded there; /help lists it.
func TestInitAndCustomCommandsArePrompts(t *testing.T) {
	be := &richBackend{fakeBackend: &fakeBackend{}}
	h := newHarness(t, Options{Backend: be}, 120, 40)
	h.typeText("/init", true)
	h.until("the /init leg", h.idle)
	h.typeText("/review main.go", true)
	h.until("the command's leg", func() bool { return be.promptCount() == 2 && h.idle() })
	h.typeText("/nope", true)
	if be.prompts[0] != initPrompt || be.prompts[1] != "/review main.go" {
		t.Errorf("prompts %q", be.prompts)
	}
	// Before /help, whose list fills most of a 40-line screen.
	f := h.frame()
	for _, want := range []string{"/init: asking the model", "unknown command /nope"} {
		if !strings.Contains(f, want) {
			t.Errorf("%q missing:\n%s", want, f)
		}
	}
	h.typeText("/help", true)
	f = h.frame()
	for _, want := range []string{"/review", "Review a file", "/permissions"} {
		if !strings.Contains(f, want) {
			t.Errorf("%q missing:\n%s", want, f)
		}
	}
}

// TestCommandsAskTheBackend: /model, /compact, /permissions and /agents show what the
// back-end answered; a back-end without them says they are not offered.
func TestCommandsAskTheBackend(t *testing.T) {
	be := &richBackend{fakeBackend: &fakeBackend{}}
	approver := NewApprover()
	approver.always["Bash(go test ./...)"] = true // as a "2" answer leaves it
	h := newHarness(t, Options{Backend: be, Model: "claude-sonnet-4-5", Approver: approver}, 120, 50)
	h.typeText("/model", true)
	for _, c := range []string{"/model nope", "/model opus", "/compact", "/permissions", "/agents"} {
		n := len(h.m.entries)
		h.typeText(c, true)
		h.until(c, func() bool { return len(h.m.entries) > n })
	}
	f := h.frame()
	for _, want := range []string{
		"model: claude-sonnet-4-5; /model NAME switches",
		"the model did not change: no such model", "model: resolved-opus from the next turn on",
		"compacted (summary): about 120.0k tokens → 8.0k",
		"DENY  Bash(rm *) — user settings /home/p/.sema/settings.json", "ALLOW Read — --allowed-tools",
		"allowed always in this session (your answers; not saved to a settings file):", "  Bash(go test ./...)",
		"general-purpose — General work.", "reviewer — Reviews.", "not loaded: bad.md has no front matter",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("%q missing:\n%s", want, f)
		}
	}
	if !strings.Contains(h.statusLine(), "resolved-opus") {
		t.Errorf("the status line does not name the new model: %s", h.statusLine())
	}

	plain := newHarness(t, Options{Backend: &fakeBackend{}}, 120, 40)
	for _, c := range []string{"/compact", "/permissions", "/agents", "/model x"} {
		plain.typeText(c, true)
	}
	if got := strings.Count(plain.frame(), "is not offered by this session's back-end"); got != 4 {
		t.Errorf("%d refusals, want 4:\n%s", got, plain.frame())
	}
}

func (h *harness) statusLine() string {
	lines := strings.Split(strings.TrimRight(h.frame(), "\n"), "\n")
	return lines[len(lines)-1]
}

var _ tea.Model = (*Model)(nil)

// TestModelSwitchEndsTheDemoLabel: after /model the scripted demo no longer answers, so
// the status line stops saying DEMO and names the model.
func TestModelSwitchEndsTheDemoLabel(t *testing.T) {
	h := newHarness(t, Options{Backend: &richBackend{fakeBackend: &fakeBackend{}}, Demo: true, Model: "scripted"}, 80, 24)
	h.typeText("/model opus", true)
	h.until("the switch", func() bool { return strings.Contains(h.frame(), "from the next turn on") })
	if s := h.statusLine(); strings.Contains(s, "DEMO") || !strings.Contains(s, "resolved-opus") {
		t.Errorf("status line after leaving the demo: %s", s)
	}
}
