package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/tools"
	"github.com/sema-agent/sema/tools/files"
)

// seatRun is what one scripted run of the seats tests showed.
type seatRun struct {
	res       *agent.TaskResult
	questions []*agent.PermissionQuestion
	results   []*agent.ToolResult
}

// runSeats runs spec with deps against a script of turns and collects the questions
// and tool results of its events.
func runSeats(t *testing.T, deps agent.Deps, spec agent.TaskSpec, turns ...scripted.Turn) seatRun {
	t.Helper()
	deps.Provider = scripted.New(scripted.Script{Turns: turns})
	var out seatRun
	for ev, err := range agent.New(deps).Events(context.Background(), spec) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Type == agent.EventPermission && ev.Question != nil:
			out.questions = append(out.questions, ev.Question)
		case ev.Type == agent.EventToolResult:
			out.results = append(out.results, ev.ToolResult)
		}
		if ev.Result != nil {
			out.res = ev.Result
		}
	}
	if out.res == nil {
		t.Fatal("the run ended without a result")
	}
	return out
}

// approverCounting allows (or refuses) every question and counts them.
func approverCounting(n *atomic.Int32, allow bool) permission.Approver {
	return permission.ApproverFunc(func(context.Context, permission.ApprovalRequest) (permission.ApprovalDecision, error) {
		n.Add(1)
		if allow {
			return permission.ApprovalDecision{Behavior: permission.Allow}, nil
		}
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "not now"}, nil
	})
}

// A tool that requires a person for every call reaches a person under
// bypassPermissions, an allow rule, a hook's allow and auto's classifier alike — and
// does not run when nobody answers.
func TestRequiresUserInteractionReachesAPerson(t *testing.T) {
	t.Parallel()
	hookAllow := func(context.Context, permission.Call) (permission.HookDecision, error) {
		return permission.HookDecision{Behavior: permission.Allow}, nil
	}
	rules, err := permission.ParseRules([]string{"Deploy"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mode   permission.Mode
		onAsk  agent.OnAsk
		person bool // an approver is there
		yes    bool // and says yes
		ran    bool
		asked  int32
	}{
		{name: "bypass, a person says yes", mode: permission.ModeBypassPermissions, person: true, yes: true, ran: true, asked: 1},
		{name: "bypass, a person says no", mode: permission.ModeBypassPermissions, person: true, asked: 1},
		{name: "bypass, nobody answers", mode: permission.ModeBypassPermissions},
		{name: "bypass, on-ask deny", mode: permission.ModeBypassPermissions, onAsk: agent.OnAskDeny, person: true, yes: true},
		{name: "auto, the classifier would allow", mode: permission.ModeAuto, person: true, yes: true, ran: true, asked: 1},
		{name: "auto, nobody answers", mode: permission.ModeAuto},
		{name: "dontAsk", mode: permission.ModeDontAsk, person: true, yes: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var ran, asked atomic.Int32
			deploy := tools.Func(tools.Spec{Name: "Deploy", Description: "Deploys.", Effect: tools.EffectRead, RequiresUserInteraction: true},
				func(context.Context, json.RawMessage) tools.Result { ran.Add(1); return tools.Text("deployed") })
			deps := agent.Deps{Tools: []tools.Tool{deploy}, Classifier: allowClassifier{},
				Policy: &agent.Policy{Rules: rules}, Hooks: &agent.Hooks{PreToolUse: []permission.Hook{hookAllow}}}
			if c.person {
				deps.Approver = approverCounting(&asked, c.yes)
			}
			got := runSeats(t, deps, agent.TaskSpec{Prompt: "deploy", Root: t.TempDir(), PermissionMode: c.mode, OnAsk: c.onAsk},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("Deploy", `{}`)}}, scripted.Turn{Text: "done"})
			if (ran.Load() == 1) != c.ran || asked.Load() != c.asked {
				t.Fatalf("ran %d times, the person was asked %d times; want ran %v, asked %d", ran.Load(), asked.Load(), c.ran, c.asked)
			}
			if len(got.questions) != 1 || !got.questions[0].PersonOnly || !strings.Contains(got.questions[0].Message, "Deploy requires a person's approval for every call") {
				t.Fatalf("questions %+v, want one person-only question saying why", got.questions)
			}
			if !c.ran && (len(got.res.PermissionDenials) != 1 || got.res.PermissionDenials[0].Code != permission.CodeDenied) {
				t.Fatalf("denials %+v, want the refused call", got.res.PermissionDenials)
			}
		})
	}
}

// A deny rule still refuses a tool that requires a person: nobody is asked.
func TestRequiresUserInteractionDenyRuleWins(t *testing.T) {
	t.Parallel()
	rules, err := permission.ParseRules(nil, []string{"Deploy"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ran, asked atomic.Int32
	deploy := tools.Func(tools.Spec{Name: "Deploy", RequiresUserInteraction: true},
		func(context.Context, json.RawMessage) tools.Result { ran.Add(1); return tools.Text("deployed") })
	got := runSeats(t, agent.Deps{Tools: []tools.Tool{deploy}, Approver: approverCounting(&asked, true), Policy: &agent.Policy{Rules: rules}},
		agent.TaskSpec{Prompt: "deploy", Root: t.TempDir(), PermissionMode: permission.ModeBypassPermissions},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("Deploy", `{}`)}}, scripted.Turn{Text: "done"})
	if ran.Load() != 0 || asked.Load() != 0 || len(got.questions) != 0 || len(got.res.PermissionDenials) != 1 {
		t.Fatalf("ran %d, asked %d, questions %d, denials %+v: want a refusal and nobody asked", ran.Load(), asked.Load(), len(got.questions), got.res.PermissionDenials)
	}
}

// The passthrough seat asks in default mode (with the tool's own question) and runs in
// bypassPermissions.
func TestPassthroughToolAsksInDefaultAndRunsInBypass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode permission.Mode
		ran  bool
	}{
		{mode: permission.ModeDefault},
		{mode: permission.ModeAcceptEdits},
		{mode: permission.ModeBypassPermissions, ran: true},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			lookup := tools.Func(tools.Spec{Name: "Lookup", Effect: tools.EffectRead, PermissionSeat: tools.SeatPassthrough, PassthroughQuestion: "Query the customer database?"},
				func(context.Context, json.RawMessage) tools.Result { ran.Add(1); return tools.Text("found") })
			got := runSeats(t, agent.Deps{Tools: []tools.Tool{lookup}}, agent.TaskSpec{Prompt: "look", Root: t.TempDir(), PermissionMode: c.mode},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("Lookup", `{}`)}}, scripted.Turn{Text: "done"})
			if (ran.Load() == 1) != c.ran {
				t.Fatalf("ran %d times, want ran %v", ran.Load(), c.ran)
			}
			if c.ran {
				if len(got.questions) != 0 {
					t.Fatalf("questions %+v under %s", got.questions, c.mode)
				}
				return
			}
			if len(got.questions) != 1 || got.questions[0].Message != "Query the customer database?" || got.questions[0].PersonOnly {
				t.Fatalf("questions %+v, want the tool's own ordinary question", got.questions)
			}
		})
	}
}

// In plan mode a read-only claim spares a tool that declared no effect the plan question;
// a declared exec outranks the same claim.
func TestReadOnlyHintInPlanMode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		effect tools.Effect
		ran    bool
	}{
		{name: "no effect declared", ran: true},
		{name: "exec declared", effect: tools.EffectExec},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			search := tools.Func(tools.Spec{Name: "Search", Effect: c.effect, ReadOnlyHint: true},
				func(context.Context, json.RawMessage) tools.Result { ran.Add(1); return tools.Text("hits") })
			got := runSeats(t, agent.Deps{Tools: []tools.Tool{search}}, agent.TaskSpec{Prompt: "plan", Root: t.TempDir(), PermissionMode: permission.ModePlan},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("Search", `{}`)}}, scripted.Turn{Text: "done"})
			if (ran.Load() == 1) != c.ran {
				t.Fatalf("ran %d times, want ran %v (questions %+v)", ran.Load(), c.ran, got.questions)
			}
			if !c.ran && (len(got.questions) != 1 || !got.questions[0].PersonOnly || !strings.Contains(got.questions[0].Message, "Plan mode")) {
				t.Fatalf("questions %+v, want plan mode's person-only question", got.questions)
			}
		})
	}
}

// A read-only claim never makes the calls of one turn run concurrently: only a declared
// read does. A call that finds another one running records it.
func TestReadOnlyHintNeverRunsConcurrently(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		effect     tools.Effect
		concurrent bool
	}{
		{name: "claim only"},
		{name: "claim over exec", effect: tools.EffectExec},
		{name: "declared read", effect: tools.EffectRead, concurrent: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var inFlight, overlapped atomic.Int32
			started := make(chan struct{}, 2)
			peek := tools.Func(tools.Spec{Name: "Peek", Effect: c.effect, ReadOnlyHint: true},
				func(ctx context.Context, _ json.RawMessage) tools.Result {
					if inFlight.Add(1) > 1 {
						overlapped.Add(1)
					}
					defer inFlight.Add(-1)
					started <- struct{}{}
					if c.concurrent {
						// Wait for the other call, so the test fails (rather than passes by
						// luck) if declared reads stopped running together.
						deadline := time.After(10 * time.Second)
						for inFlight.Load() < 2 && overlapped.Load() == 0 {
							select {
							case <-deadline:
								return tools.Fail("test.timeout", "the calls did not overlap")
							case <-time.After(time.Millisecond):
							}
						}
					} else {
						time.Sleep(30 * time.Millisecond)
					}
					return tools.Text("peeked")
				})
			got := runSeats(t, agent.Deps{Tools: []tools.Tool{peek}}, agent.TaskSpec{Prompt: "peek", Root: t.TempDir()},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("Peek", `{"n":1}`), call("Peek", `{"n":2}`)}}, scripted.Turn{Text: "done"})
			if len(got.results) != 2 || got.results[0].IsError || got.results[1].IsError {
				t.Fatalf("results %+v", got.results)
			}
			if (overlapped.Load() > 0) != c.concurrent {
				t.Fatalf("overlapped %d times, want concurrent %v", overlapped.Load(), c.concurrent)
			}
		})
	}
}

// The door refuses a tool whose seats hold a word the gate does not know, before
// anything runs: a misspelled seat must not be read as another one.
func TestDoorRefusesUnknownSeats(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, json.RawMessage) tools.Result { return tools.Text("") }
	for _, tool := range []tools.Tool{
		tools.Func(tools.Spec{Name: "A", PermissionSeat: "Passthrough"}, noop),
		tools.Func(tools.Spec{Name: "A", Effect: "readonly"}, noop),
		tools.Func(tools.Spec{Name: "A", PassthroughQuestion: "Sure?"}, noop),
		nil,
	} {
		r := agent.New(agent.Deps{Provider: scripted.New(scripted.Script{}), Tools: []tools.Tool{tool}})
		_, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir()})
		if !sema.IsCode(err, tools.CodeSpecInvalid) {
			t.Errorf("%v: err %v, want %s", tool, err, tools.CodeSpecInvalid)
		}
	}
}

// Deps.ImageDownsampler reaches the Read tool of every leg: an injected one is called
// and its output sent; imagefit.NoDownsample refuses an image over the limits.
func TestDepsImageDownsampler(t *testing.T) {
	t.Parallel()
	wide := image.NewGray(image.Rect(0, 0, imagefit.MaxDimension+100, 10))
	for i := range wide.Pix {
		wide.Pix[i] = uint8(i)
	}
	var raw, small bytes.Buffer
	if err := png.Encode(&raw, wide); err != nil {
		t.Fatal(err)
	}
	tiny := image.NewGray(image.Rect(0, 0, 3, 1))
	tiny.SetGray(1, 0, color.Gray{Y: 200})
	if err := png.Encode(&small, tiny); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		off  bool
		code string
	}{
		{name: "injected"},
		{name: "off", off: true, code: files.CodeImageTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var called atomic.Int32
			down := func(_ context.Context, data []byte, mt string) (imagefit.Downsampled, bool, error) {
				called.Add(1)
				if !bytes.Equal(data, raw.Bytes()) || mt != "image/png" {
					t.Errorf("the downsampler was given %d bytes of %s, not the file", len(data), mt)
				}
				return imagefit.Downsampled{Data: small.Bytes(), MediaType: "image/png"}, true, nil
			}
			if c.off {
				down = imagefit.NoDownsample
			}
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "wide.png"), raw.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got := runSeats(t, agent.Deps{ImageDownsampler: down}, agent.TaskSpec{Prompt: "look", Root: root},
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("Read", `{"file_path":"wide.png"}`)}}, scripted.Turn{Text: "done"})
			if len(got.results) != 1 || got.results[0].Code != c.code {
				t.Fatalf("results %+v, want code %q", got.results, c.code)
			}
			blocks := toolResults(t, got.res, 1)[0].Content
			var images [][]byte
			for _, b := range blocks {
				if b.Kind == model.KindImage {
					images = append(images, b.Data)
				}
			}
			switch {
			case c.code != "" && len(images) != 0:
				t.Fatalf("an image was sent with the refusal")
			case c.code == "" && (len(images) != 1 || !bytes.Equal(images[0], small.Bytes())):
				t.Fatalf("sent %d images, want the downsampler's output", len(images))
			case !c.off && called.Load() != 1:
				t.Fatalf("the injected downsampler was called %d times, want once", called.Load())
			}
		})
	}
}
