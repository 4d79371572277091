package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
)

// armingClassifier allows every call it is asked about, once Arm succeeded; it counts
// both.
type armingClassifier struct {
	armErr           error
	arms, classified atomic.Int32
}

func (c *armingClassifier) Arm(context.Context) error {
	c.arms.Add(1)
	return c.armErr
}

func (c *armingClassifier) Classify(context.Context, permission.ClassifyRequest) (permission.Behavior, string, error) {
	c.classified.Add(1)
	return permission.Allow, "fine", nil
}

// countingApprover allows every question and counts them.
func countingApprover(n *atomic.Int32) permission.Approver {
	return permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		n.Add(1)
		return permission.ApprovalDecision{Behavior: permission.Allow}, nil
	})
}

// A deployment that wires no classifier face (permission.NoClassifier) folds a requested
// auto to default — face_absent, in the manifest's receipt and in a notice — and the
// leg's write question goes to the approver, not to any classifier.
func TestAutoWithoutAClassifierFoldsFaceAbsent(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	deps := agent.Deps{Provider: writeOnce(), Classifier: permission.NoClassifier, Approver: countingApprover(&asked)}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: t.TempDir(), PermissionMode: permission.ModeAuto})
	must(t, err)
	want := agent.ModeReceipt{Requested: "auto", Effective: "default", FoldedBy: string(permission.FoldFaceAbsent)}
	if res.Manifest.Mode != want {
		t.Fatalf("receipt %+v, want %+v", res.Manifest.Mode, want)
	}
	n := noticeOf(res, permission.CodeModeFolded)
	if n == nil || n.Detail["folded_by"] != string(permission.FoldFaceAbsent) || n.Detail["folded"] != "auto" {
		t.Fatalf("fold notice %+v", n)
	}
	if asked.Load() != 1 || res.Status != sema.StatusCompleted || len(res.EditedFiles) != 1 {
		t.Fatalf("approver asked %d times, status %s, edited %v: the write should be the approver's question", asked.Load(), res.Status, res.EditedFiles)
	}
}

// A steer to auto whose classifier fails to arm is refused by name and rolled back: the
// leg stays in the mode it had (acceptEdits, whose write lands unasked), and nothing is
// classified. The same steer with an arming that succeeds moves the leg to auto, where
// the next write is the classifier's to answer.
func TestSteerToAutoRolledBackWhenArmingFails(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{true, false} {
		cl := &armingClassifier{}
		if fail {
			cl.armErr = errors.New("the classifier's model is unreachable")
		}
		ctl := &agent.Control{}
		var steerErr error
		var receipt permission.Receipt
		steer := &fakeTool{name: "steer", effect: tools.EffectRead, run: func(ctx context.Context, _ json.RawMessage) tools.Result {
			receipt, steerErr = ctl.SetPermissionMode(ctx, permission.ModeAuto)
			return tools.Text("steered")
		}}
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("steer", `{}`)}},
			{ToolCalls: []scripted.ToolCall{write("a.txt", "after the steer")}},
			{Text: "done"},
		}})
		var asked atomic.Int32
		root := t.TempDir()
		res, err := agent.New(agent.Deps{Provider: p, Classifier: cl, Approver: countingApprover(&asked), Tools: []tools.Tool{steer}}).
			Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits, Control: ctl})
		must(t, err)
		if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "after the steer" {
			t.Fatalf("fail=%v: the write did not land (%s, denials %+v)", fail, res.Status, res.PermissionDenials)
		}
		if asked.Load() != 0 {
			t.Fatalf("fail=%v: the approver was asked %d times", fail, asked.Load())
		}
		if !fail {
			if steerErr != nil || receipt.Effective != permission.ModeAuto || cl.classified.Load() != 1 {
				t.Fatalf("calibration: steer %v, receipt %+v, classified %d", steerErr, receipt, cl.classified.Load())
			}
			continue
		}
		if sema.CodeOf(steerErr) != permission.CodeAutoArmFailed {
			t.Fatalf("the failed steer answered %v, want %s", steerErr, permission.CodeAutoArmFailed)
		}
		if receipt.Effective != permission.ModeAcceptEdits || receipt.Requested != permission.ModeAcceptEdits {
			t.Fatalf("receipt after the rollback %+v, want acceptEdits", receipt)
		}
		if cl.arms.Load() != 1 || cl.classified.Load() != 0 {
			t.Fatalf("armed %d, classified %d: a failed arming must leave no classifier", cl.arms.Load(), cl.classified.Load())
		}
	}
}

// A leg that starts in auto arms its classifier at its first decision; when that fails,
// a notice says so and the leg's questions go to the approver, as under default.
func TestAutoLegWhoseArmingFailsAsksTheApprover(t *testing.T) {
	t.Parallel()
	cl := &armingClassifier{armErr: errors.New("no policy loaded")}
	var asked atomic.Int32
	res, err := agent.New(agent.Deps{Provider: writeOnce(), Classifier: cl, Approver: countingApprover(&asked)}).
		Run(context.Background(), agent.TaskSpec{Prompt: "write", Root: t.TempDir(), PermissionMode: permission.ModeAuto})
	must(t, err)
	if noticeOf(res, agent.CodeArmingFailed) == nil {
		t.Fatalf("no %s notice among %+v", agent.CodeArmingFailed, res.Notices)
	}
	if cl.classified.Load() != 0 || asked.Load() != 1 || len(res.EditedFiles) != 1 {
		t.Fatalf("classified %d, approver asked %d, edited %v", cl.classified.Load(), asked.Load(), res.EditedFiles)
	}
}

// Hook input reports the leg's mode without deciding with it (Observed): a parent
// steered to auto reaches its running child through the child's ceiling, and the
// child's hooks then report auto — yet reading it for them arms no classifier. Only a
// decision of the child's own would.
func TestHookInputReportsTheModeWithoutArming(t *testing.T) {
	t.Parallel()
	cl := &armingClassifier{}
	ctl := &agent.Control{}
	var mu sync.Mutex
	var seen []string
	observe := func(_ context.Context, in hooks.Input) (hooks.Output, error) {
		mu.Lock()
		seen = append(seen, string(in.HookEventName)+":"+in.PermissionMode)
		mu.Unlock()
		return hooks.Output{}, nil
	}
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "steer", "CHILD steer")}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "steer_parent"}}}, {Text: "steered"}}}},
	})
	deps := agent.Deps{Provider: p, Classifier: cl, Tools: []tools.Tool{steerTool{ctl: ctl, mode: permission.ModeAuto}},
		Hooks: &agent.Hooks{Events: []hooks.Hook{
			{Event: hooks.PostToolUse, Matcher: "steer_parent", Func: observe},
			{Event: hooks.SubagentStop, Func: observe},
		}}}
	res, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: t.TempDir(), PermissionMode: permission.ModeAcceptEdits, Control: ctl})
	must(t, err)
	if res.Status != sema.StatusCompleted {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"PostToolUse:auto", "SubagentStop:auto"}; !slices.Equal(seen, want) {
		t.Fatalf("hooks saw %v, want %v", seen, want)
	}
	if n := cl.arms.Load(); n != 1 {
		t.Fatalf("the classifier was armed %d times, want once (the parent's steer)", n)
	}
}
