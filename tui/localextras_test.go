package tui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

func scriptedRunner(prov model.Provider, approver *Approver) *agent.Runner {
	deps := agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}
	if approver != nil {
		deps.Approver = approver
	}
	return agent.New(deps)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastUserText is the text of the last user message of the provider's last request.
func lastUserText(p *scripted.Provider) string {
	reqs := p.Requests()
	if len(reqs) == 0 {
		return ""
	}
	msgs := reqs[len(reqs)-1].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return blockText(&msgs[i], model.KindText)
		}
	}
	return ""
}

// TestLocalCompactsBetweenLegs: /compact between legs compacts the stored session, and
// the next leg continues from the summary.
func TestLocalCompactsBetweenLegs(t *testing.T) {
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}, {Text: "THE SUMMARY"}, {Text: "three"}}})
	l := NewLocal(scriptedRunner(prov, nil), agent.TaskSpec{Root: t.TempDir(), OnAsk: agent.OnAskDeny})
	if _, err := l.Compact(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "no conversation") {
		t.Fatalf("compact before any leg: %v, want a refusal", err)
	}
	localLegs(t, l, "first", "second")
	info, err := l.Compact(context.Background(), "keep the names")
	if err != nil || info == nil {
		t.Fatalf("compact between legs: %+v, %v", info, err)
	}
	if info.Reason != "manual" {
		t.Errorf("compaction %+v, want reason manual", info)
	}
	localLegs(t, l, "third")
	var sawSummary bool
	for _, m := range prov.Requests()[len(prov.Requests())-1].Messages {
		if strings.Contains(blockText(&m, model.KindText), "THE SUMMARY") {
			sawSummary = true
		}
	}
	if !sawSummary {
		t.Error("the leg after the compaction does not continue from the summary")
	}
}

// TestLocalCompactsTheRunningLeg: /compact while a leg waits on a question asks that leg,
// which compacts before its next request and reports it.
func TestLocalCompactsTheRunningLeg(t *testing.T) {
	dir := t.TempDir()
	write := scripted.ToolCall{Name: "Write", Input: json.RawMessage(`{"file_path":"a.txt","content":"x\n"}`)}
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write}}, {Text: "SUMMARY"}, {Text: "done"}}})
	approver := NewApprover()
	l := NewLocal(scriptedRunner(prov, approver), agent.TaskSpec{Root: dir, OnAsk: agent.OnAskApprover})
	go func() {
		for msg := range approver.inbox {
			q := msg.(QuestionMsg)
			info, err := l.Compact(context.Background(), "")
			if err != nil || info != nil {
				t.Errorf("compact while the leg runs: %+v, %v; want it asked of the leg", info, err)
			}
			q.answer(ChoiceAllowOnce)
		}
	}()
	legs := localLegs(t, l, "write")
	close(approver.inbox)
	if ev := first(legs[0], agent.EventCompaction); ev.Compaction == nil || ev.Compaction.Reason != "manual" {
		t.Errorf("the leg did not compact as asked: %+v", ev.Compaction)
	}
}

// TestLocalReportsPermissions: /permissions reports the task's rules with their seat.
func TestLocalReportsPermissions(t *testing.T) {
	prov := scripted.New(scripted.Script{})
	l := NewLocal(scriptedRunner(prov, nil), agent.TaskSpec{Root: t.TempDir(), OnAsk: agent.OnAskDeny, AllowedTools: []string{"Bash(go test *)"}})
	rep, err := l.Permissions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	text := permissionsText(rep)
	if !strings.Contains(text, "ALLOW Bash(go test *) — --allowed-tools") || !strings.Contains(text, "mode default") {
		t.Errorf("report:\n%s", text)
	}
}

// TestLocalListsAgents: /agents lists the built-in types and the root's agent files.
func TestLocalListsAgents(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".sema", "agents", "reviewer.md"), "---\nname: reviewer\ndescription: Reviews a change.\n---\nReview it.\n")
	writeFile(t, filepath.Join(dir, ".sema", "agents", "broken.md"), "no front matter\n")
	l := NewLocal(scriptedRunner(scripted.New(scripted.Script{}), nil), agent.TaskSpec{Root: dir})
	defs, err := l.Agents(context.Background())
	if err == nil || !strings.Contains(err.Error(), "broken.md") {
		t.Errorf("the broken agent file is not reported: %v", err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	got := strings.Join(names, ",")
	if !strings.Contains(got, "general-purpose") || !strings.Contains(got, "reviewer") {
		t.Errorf("agents %s", got)
	}
}

// TestLocalExpandsCustomCommands: a prompt naming a custom command reaches the model
// expanded, as it does headless, and the command is listed.
func TestLocalExpandsCustomCommands(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".sema", "commands", "review.md"), "---\ndescription: Review a file\nallowed-tools: Read\n---\nReview $ARGUMENTS carefully.\n")
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
	l := NewLocal(scriptedRunner(prov, nil), agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny})
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".sema", "commands", "review.md"), "My own review of $ARGUMENTS.\n")
	l.SetCommands(commands.Load(commands.Options{Root: dir, Home: home}), false)
	if cs := l.Commands(); len(cs) != 1 || cs[0].Name != "review" {
		t.Fatalf("commands %+v", cs)
	}
	legs := localLegs(t, l, "/review main.go")
	if got := lastUserText(prov); !strings.Contains(got, "Review main.go carefully.") {
		t.Errorf("the model was sent %q", got)
	}
	var dropped, shadowed bool
	for _, ev := range legs[0] {
		if ev.Type == agent.EventNotice {
			dropped = dropped || ev.Notice.Code == agent.CodeProjectSettingsUntrusted
			shadowed = shadowed || ev.Notice.Code == CodeCommandShadowed
		}
	}
	if !dropped || !shadowed {
		t.Errorf("an untrusted workspace's command: allowed-tools dropped with a notice %v, the shadowed own command said %v", dropped, shadowed)
	}
	if r := first(legs[0], agent.EventResult).Result; r == nil || r.Manifest.Mode.Effective == "" {
		t.Fatalf("the command's leg did not run: %+v", r)
	}
}

// TestLocalSwitchesModel: after /model the next leg runs on the model opened for it.
func TestLocalSwitchesModel(t *testing.T) {
	a := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "from a"}}})
	b := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "from b"}}})
	l := NewLocal(scriptedRunner(a, nil), agent.TaskSpec{Root: t.TempDir(), OnAsk: agent.OnAskDeny})
	if _, err := l.SetModel(context.Background(), "x"); err == nil {
		t.Fatal("SetModel without an opener should refuse")
	}
	store := session.NewMemory() // b continues a's session: both runners share the store
	l.runner = agent.New(agent.Deps{Provider: a, Store: store, History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}})
	l.SetModelOpener(func(ref string) (*agent.Runner, string, error) {
		return agent.New(agent.Deps{Provider: b, Store: store, History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}), "model-" + ref, nil
	})
	legs := localLegs(t, l, "first")
	if name, err := l.SetModel(context.Background(), "b"); err != nil || name != "model-b" {
		t.Fatalf("SetModel: %q, %v", name, err)
	}
	legs = append(legs, localLegs(t, l, "second")...)
	r := first(legs[1], agent.EventResult).Result
	if r == nil || r.Result != "from b" || r.Manifest.Model != "model-b" {
		t.Errorf("second leg %+v", r)
	}
	if r.SessionID != first(legs[0], agent.EventResult).Result.SessionID {
		t.Error("the switched model did not continue the session")
	}
}

// retrying is a provider that reports a retry before each answer.
type retrying struct{ *scripted.Provider }

func (p retrying) Stream(ctx context.Context, req *model.Request, on func(model.Delta)) (*model.Response, error) {
	model.ObserveRetry(ctx, model.Retry{Attempt: 1, Status: 529, Wait: 1500_000_000})
	return p.Provider.Stream(ctx, req, on)
}

// TestLocalRetriesAreNotices: a provider's retry is a notice of the leg, not a line on
// stderr drawn over the screen.
func TestLocalRetriesAreNotices(t *testing.T) {
	prov := retrying{scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})}
	l := NewLocal(scriptedRunner(prov, nil), agent.TaskSpec{Root: t.TempDir(), OnAsk: agent.OnAskDeny})
	legs := localLegs(t, l, "hi")
	ev := first(legs[0], agent.EventNotice)
	if ev.Notice == nil || ev.Notice.Code != CodeRetry || !strings.Contains(ev.Notice.Message, "retrying the model request in 1.5s (HTTP 529)") {
		t.Errorf("retry notice %+v", ev.Notice)
	}
}

// TestLocalRefusedModeSaysTheModeInForce: a steer to auto the leg cannot arm is refused,
// and the refusal carries the mode the leg stays in.
func TestLocalRefusedModeSaysTheModeInForce(t *testing.T) {
	write := scripted.ToolCall{Name: "Write", Input: json.RawMessage(`{"file_path":"a.txt","content":"x\n"}`)}
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write}}, {Text: "done"}}})
	approver := NewApprover()
	runner := agent.New(agent.Deps{Provider: prov, Store: session.NewMemory(), History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"},
		Approver: approver, Classifier: unarmable{}})
	l := NewLocal(runner, agent.TaskSpec{Root: t.TempDir(), OnAsk: agent.OnAskApprover})
	go func() {
		for msg := range approver.inbox {
			q := msg.(QuestionMsg)
			got, err := l.SetMode(context.Background(), permission.ModeAuto)
			if err == nil || got != permission.ModeDefault {
				t.Errorf("SetMode(auto) without a classifier: %q, %v; want a refusal in default", got, err)
			}
			q.answer(ChoiceDeny)
		}
	}()
	localLegs(t, l, "write")
	close(approver.inbox)
}

// unarmable is an auto-mode classifier that cannot be made ready.
type unarmable struct{}

func (unarmable) Classify(context.Context, permission.ClassifyRequest) (permission.Behavior, string, error) {
	return permission.Ask, "", nil
}

func (unarmable) Arm(context.Context) error { return errors.New("no classifier model is reachable") }

// TestLocalCommandToolsApplyOnlyWhenTrusted: a workspace command's allowed-tools allow
// its calls for that leg in a trusted workspace, and not in an untrusted one, nor in the
// next leg.
func TestLocalCommandToolsApplyOnlyWhenTrusted(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ".sema", "commands", "hi.md"), "---\nallowed-tools: Bash(touch x.txt)\n---\nSay hi.\n")
		echo := scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"touch x.txt"}`)}
		prov := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{echo}}, {Text: "done"}, {ToolCalls: []scripted.ToolCall{echo}}, {Text: "done"}}})
		l := NewLocal(scriptedRunner(prov, nil), agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny})
		l.SetCommands(commands.Load(commands.Options{Root: dir}), trusted)
		legs := localLegs(t, l, "/hi", "echo again")
		denied := func(leg int) bool { return len(first(legs[leg], agent.EventResult).Result.PermissionDenials) > 0 }
		if denied(0) == trusted {
			t.Errorf("trusted %v: the command's call was denied %v", trusted, denied(0))
		}
		if !denied(1) {
			t.Errorf("trusted %v: the command's allowed-tools outlived its leg", trusted)
		}
	}
}

// TestLocalRunsACommandOnItsModel: a command whose file names a model runs its leg on that
// model, opened as /model opens one, and the next prompt is back on the session's; a
// workspace's command in an untrusted workspace keeps the session's model, saying so.
func TestLocalRunsACommandOnItsModel(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".sema", "commands", "quick.md"), "---\nmodel: fast\n---\nQuick look at $ARGUMENTS.\n")
	writeFile(t, filepath.Join(dir, ".sema", "commands", "deep.md"), "---\nmodel: fast\n---\nDeep look at $ARGUMENTS.\n")
	a := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "from the session's model"}, {Text: "session again"}, {Text: "session, deep"}}})
	b := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "from the command's model"}}})
	store := session.NewMemory()
	l := NewLocal(agent.New(agent.Deps{Provider: a, Store: store, History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}),
		agent.TaskSpec{Root: dir, OnAsk: agent.OnAskDeny})
	var opened []string
	l.SetModelOpener(func(ref string) (*agent.Runner, string, error) {
		opened = append(opened, ref)
		return agent.New(agent.Deps{Provider: b, Store: store, History: history.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}), "model-" + ref, nil
	})
	l.SetCommands(commands.Load(commands.Options{Root: dir, Home: home}), false)
	legs := localLegs(t, l, "/quick main.go")
	legs = append(legs, localLegs(t, l, "and now?")...)
	legs = append(legs, localLegs(t, l, "/deep main.go")...)
	r0, r1, r2 := first(legs[0], agent.EventResult).Result, first(legs[1], agent.EventResult).Result, first(legs[2], agent.EventResult).Result
	if r0 == nil || r0.Result != "from the command's model" || r0.Manifest.Model != "model-fast" {
		t.Fatalf("the command's leg: %+v", r0)
	}
	if r1 == nil || r1.Result != "from the session's model" {
		t.Fatalf("the next prompt's leg ran on %+v, want the session's model again", r1)
	}
	if r2 == nil || r2.Result != "session again" || len(opened) != 1 {
		t.Fatalf("the untrusted workspace's command: %+v, models opened %v", r2, opened)
	}
	said := func(evs []agent.Event, code string) bool {
		for _, ev := range evs {
			if ev.Type == agent.EventNotice && ev.Notice.Code == code {
				return true
			}
		}
		return false
	}
	if !said(legs[0], CodeCommandModel) || !said(legs[2], agent.CodeProjectSettingsUntrusted) {
		t.Error("the notices of the command's model, or of its being dropped, are missing")
	}
}
