package hookfold

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

func TestPreToolUse(t *testing.T) {
	edit := json.RawMessage(`{"command":"ls"}`)
	for _, c := range []struct {
		name   string
		res    hooks.Result
		want   permission.Behavior
		reason string
		err    string
		edit   bool
	}{
		{name: "failure", res: hooks.Result{Failures: []hooks.Failure{{Hook: hooks.Hook{Command: "lint.sh\nmore"}, Why: "timed out after 60s"}}, Permission: "allow"},
			err: "the hook lint.sh … timed out after 60s"},
		{name: "conflict", res: hooks.Result{Conflict: true, Permission: "allow"}, err: "two hooks rewrote"},
		{name: "stop", res: hooks.Result{Stop: true, Permission: "allow"}, want: permission.Deny, reason: "a hook stopped the run"},
		{name: "stop reason", res: hooks.Result{Stop: true, StopReason: "halt"}, want: permission.Deny, reason: "halt"},
		{name: "block", res: hooks.Result{Block: true, BlockReason: "no"}, want: permission.Deny, reason: "no"},
		{name: "deny", res: hooks.Result{Permission: "deny", PermissionReason: "policy", BlockReason: "x"}, want: permission.Deny, reason: "policy"},
		{name: "ask", res: hooks.Result{Permission: "ask", PermissionReason: "check", UpdatedInput: edit}, want: permission.Ask, reason: "check", edit: true},
		{name: "allow", res: hooks.Result{Permission: "allow", UpdatedInput: edit}, want: permission.Allow, edit: true},
		{name: "silent rewrite", res: hooks.Result{UpdatedInput: edit}, edit: true},
	} {
		d, err := PreToolUse(c.res)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || d.Behavior != c.want || d.Reason != c.reason || (len(d.UpdatedInput) > 0) != c.edit {
			t.Errorf("%s: got %+v %v", c.name, d, err)
		}
	}
}

func TestPostToolUse(t *testing.T) {
	if PostToolUseEvent(tools.Result{IsError: true}) != hooks.PostToolUseFailure || PostToolUseEvent(tools.Result{}) != hooks.PostToolUse {
		t.Fatal("events")
	}
	in := PostToolUseInput(hooks.Input{ToolName: "Edit"}, tools.Result{EditedFile: "/r/a.go", Content: []model.Block{model.TextBlock("ok")}}, "ok")
	var resp map[string]any
	if err := json.Unmarshal(in.ToolResponse, &resp); err != nil || resp["content"] != "ok" || resp["success"] != true || resp["filePath"] != "/r/a.go" || in.Error != "" {
		t.Fatalf("response %s: %v", in.ToolResponse, err)
	}
	in = PostToolUseInput(hooks.Input{}, tools.Result{IsError: true}, "boom")
	if in.Error != "boom" || in.ToolResponse != nil {
		t.Fatalf("failure input: %+v", in)
	}
	add := PostToolUseFeedback(hooks.PostToolUse, hooks.Result{Block: true, BlockReason: "fix it", Context: []string{"c1"}})
	if len(add) != 2 || add[0] != "PostToolUse hook feedback: fix it" || add[1] != "c1" {
		t.Fatalf("feedback %q", add)
	}
	if add := PostToolUseFeedback(hooks.PostToolUse, hooks.Result{}); len(add) != 0 {
		t.Fatalf("no feedback: %q", add)
	}
}

func TestStops(t *testing.T) {
	if msg, ok := StopsRun(hooks.PostToolUse, hooks.Result{Stop: true}); !ok || msg != "a PostToolUse hook stopped the run: (no reason given)" {
		t.Errorf("PostToolUse stop: %q %v", msg, ok)
	}
	for _, e := range []hooks.Event{hooks.Stop, hooks.SubagentStop, hooks.SessionEnd} {
		if _, ok := StopsRun(e, hooks.Result{Stop: true}); ok {
			t.Errorf("%s stopping stops the run", e)
		}
	}
	if _, ok := StopsRun(hooks.PreToolUse, hooks.Result{}); ok {
		t.Error("no stop stops the run")
	}
	if msg, ok := PromptBlocked(hooks.Result{Block: true, BlockReason: "secret"}); !ok || !strings.HasSuffix(msg, ": secret") {
		t.Errorf("prompt blocked: %q %v", msg, ok)
	}
	if _, ok := PromptBlocked(hooks.Result{}); ok {
		t.Error("unblocked prompt blocked")
	}
	if msg, ok := Continue(hooks.SubagentStop, hooks.Result{Block: true}); !ok || msg != "A SubagentStop hook asks you to continue." {
		t.Errorf("continue: %q %v", msg, ok)
	}
	if _, ok := Continue(hooks.Stop, hooks.Result{Block: true, Stop: true}); ok {
		t.Error("a stopping hook sent the model back")
	}
}

func TestNotices(t *testing.T) {
	in := NotificationInput(hooks.Input{SessionID: "s"}, "Bash")
	if in.SessionID != "s" || in.Message != "sema needs your permission to use Bash" || in.NotificationType != "permission_prompt" {
		t.Fatalf("notification: %+v", in)
	}
	n := FailureNotice(hooks.Stop, hooks.Failure{Hook: hooks.Hook{Source: "embedder"}, Why: "panicked", TimedOut: true})
	if n.Code != hooks.CodeFailed || n.Message != "a Stop hook (a Go hook from embedder) failed: panicked" || n.Detail["timed_out"] != true {
		t.Fatalf("failure notice: %+v", n)
	}
	if got := Name(hooks.Hook{Command: strings.Repeat("x", 200)}); len(got) != 120+len("…") {
		t.Fatalf("long command named %q", got)
	}
	if m := MessageNotice(hooks.SessionStart, "hi"); m.Code != hooks.CodeMessage || m.Message != "SessionStart hook: hi" {
		t.Fatalf("message notice: %+v", m)
	}
}
