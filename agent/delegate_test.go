package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/subagent"
	"github.com/sema-agent/sema/tools"
)

func taskCall(id, typ, desc, prompt string) scripted.ToolCall {
	b, _ := json.Marshal(map[string]string{"description": desc, "prompt": prompt, "subagent_type": typ})
	return scripted.ToolCall{ID: id, Name: "Task", Input: b}
}

// collect runs the stream and returns its events.
func collect(t *testing.T, seq func(func(agent.Event, error) bool)) ([]agent.Event, *agent.TaskResult) {
	t.Helper()
	var evs []agent.Event
	var res *agent.TaskResult
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Type == agent.EventResult {
			res = ev.Result
		}
	}
	return evs, res
}

// The acceptance run: a parent in default spawns two Explore children and one
// general-purpose child in one turn; the general-purpose child's write asks a person,
// which parks the whole session naming the child; the answer resumes the child, then
// the parent, and the final result lists the child's edit.
func TestTaskChildrenRunParkAndResumeChildThenParent(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(root, "notes.txt")
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{Text: "Delegating.", ToolCalls: []scripted.ToolCall{
				taskCall("task_a", "Explore", "look at a", "EXPLORE-A: what is in a.txt?"),
				taskCall("task_b", "Explore", "look at b", "EXPLORE-B: is there a b.txt?"),
				taskCall("task_c", "general-purpose", "write notes", "GP-C: write notes.txt"),
			}},
			{Text: "all done"},
		},
		Threads: []scripted.Thread{
			{Match: "EXPLORE-A", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)}}},
				{Text: "a.txt says alpha"},
			}},
			{Match: "EXPLORE-B", Turns: []scripted.Turn{{Text: "no b.txt"}}},
			{Match: "GP-C", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{write("notes.txt", "notes\n")}},
				{Text: "notes.txt written"},
			}},
		},
	})
	r := st.runner(p)
	evs, res := collect(t, r.Events(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, OnAsk: agent.OnAskPark}))
	if res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("status %s (%v), want awaiting_approval", res.Status, res.Error)
	}
	cp, _ := res.Parked()
	if cp.Subagent == nil || cp.Subagent.Type != "general-purpose" || cp.Subagent.ToolUseID != "task_c" || cp.Tool != "Write" {
		t.Fatalf("checkpoint %+v does not name the general-purpose child's Write", cp)
	}
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Fatalf("the parked write ran: %v", err)
	}
	byType := map[string]sema.Status{}
	for _, s := range res.Subagents {
		byType[s.Type+"/"+s.ToolUseID] = s.Status
	}
	if byType["Explore/task_a"] != sema.StatusCompleted || byType["Explore/task_b"] != sema.StatusCompleted || byType["general-purpose/task_c"] != sema.StatusAwaitingApproval {
		t.Fatalf("subagents %+v", res.Subagents)
	}
	// The children's events reach the parent's stream, marked with their Task call.
	var starts, ends int
	sawChildRead := false
	for _, ev := range evs {
		switch {
		case ev.Type == agent.EventSubagentStart:
			starts++
		case ev.Type == agent.EventSubagentEnd:
			ends++
		case ev.Type == agent.EventToolUse && ev.ParentToolUseID == "task_a" && ev.ToolUse.Name == "Read":
			sawChildRead = true
		}
	}
	if starts != 3 || ends != 3 || !sawChildRead {
		t.Fatalf("stream: %d starts, %d ends, child Read seen %v", starts, ends, sawChildRead)
	}
	// The child's session is a child of the parent's, and records into its history scope.
	child, err := st.sessions.Get(context.Background(), cp.Subagent.SessionID)
	if err != nil || child.ParentID != res.SessionID || child.HistoryScope() != res.SessionID {
		t.Fatalf("child session %+v, %v", child, err)
	}

	// The answer goes to the parent's session; it resumes the child, then the parent.
	done, err := r.Resume(context.Background(), agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}},
		agent.Answer{CheckpointID: cp.ID, Allow: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != sema.StatusCompleted || done.Result != "all done" {
		t.Fatalf("resumed: %s %q %v", done.Status, done.Result, done.Error)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "notes\n" {
		t.Fatalf("notes.txt after the approval: %q, %v", b, err)
	}
	canon, _ := filepath.EvalSymlinks(notes)
	if len(done.EditedFiles) != 1 || done.EditedFiles[0] != canon {
		t.Fatalf("edited files %v, want [%s]", done.EditedFiles, canon)
	}
	if len(done.Subagents) != 1 || done.Subagents[0].Type != "general-purpose" || len(done.Subagents[0].EditedFiles) != 1 {
		t.Fatalf("subagents of the resumed leg %+v", done.Subagents)
	}
	if done.Answered == nil || done.Answered.Tool != "Write" || !done.Answered.Allowed {
		t.Fatalf("answered %+v", done.Answered)
	}
	// The parent's model saw every child's final text as its Task result.
	last := p.Requests()[len(p.Requests())-1]
	var got []string
	for _, b := range last.Messages[len(last.Messages)-1].Content {
		if b.Kind == model.KindToolResult {
			got = append(got, b.ID+"="+tools.Result{Content: b.Content}.TextOf())
		}
	}
	if strings.Join(got, "|") != "task_a=a.txt says alpha|task_b=no b.txt|task_c=notes.txt written" {
		t.Fatalf("the parent's Task results: %v", got)
	}
	// A second answer of the same question is refused by name.
	_, err = r.Resume(context.Background(), agent.TaskSpec{Root: root, Resume: &agent.Resume{SessionID: res.SessionID}}, agent.Answer{CheckpointID: cp.ID, Allow: true})
	if sema.CodeOf(err) != "checkpoint.already_claimed" {
		t.Fatalf("second answer: %v", err)
	}
	// The child's session is continued through its parent only.
	_, err = r.Run(context.Background(), agent.TaskSpec{Prompt: "more", Root: root, Resume: &agent.Resume{SessionID: child.ID}})
	if sema.CodeOf(err) != agent.CodeDelegatedSession {
		t.Fatalf("direct resume of the child: %v", err)
	}
	// The child cannot rewind its root's history; the parent's rewind undoes the child's edit.
	_, err = r.Rewind(context.Background(), agent.RewindSpec{SessionID: child.ID, ToTurn: 1, Files: true})
	if sema.CodeOf(err) != history.CodeChildCannotRewind {
		t.Fatalf("child rewind: %v", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Fatalf("the refused rewind changed the file: %v", err)
	}
	if _, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 1, Files: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Fatalf("the parent's rewind left the child's file: %v", err)
	}
}

// barrierProvider answers the first request of each child conversation only once n of
// them are waiting at once: children that run one after another never get there.
type barrierProvider struct {
	n       int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
	parent  *scripted.Provider
}

func (*barrierProvider) Name() string { return "barrier" }

func (b *barrierProvider) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	first := req.Messages[0].Content[0].Text
	if !strings.HasPrefix(first, "CHILD") {
		return b.parent.Stream(ctx, req, d)
	}
	b.mu.Lock()
	b.waiting++
	if b.waiting == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-time.After(10 * time.Second):
		return nil, sema.Errorf("model.test_barrier", "only %d children were running at once", b.waiting)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &model.Response{Content: []model.Block{model.TextBlock("done " + first)}, StopReason: model.StopEndTurn}, nil
}

func TestTaskCallsOfOneTurnRunConcurrentlyWithinTheBound(t *testing.T) {
	t.Parallel()
	var calls []scripted.ToolCall
	for _, id := range []string{"t1", "t2", "t3"} {
		calls = append(calls, taskCall(id, "Explore", "look", "CHILD "+id))
	}
	bp := &barrierProvider{n: 3, open: make(chan struct{}), parent: scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "ok"}}})}
	r := agent.New(agent.Deps{Provider: bp})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted || len(res.Subagents) != 3 {
		t.Fatalf("%s %v %+v", res.Status, res.Error, res.Subagents)
	}
	for _, s := range res.Subagents {
		if s.Status != sema.StatusCompleted {
			t.Fatalf("child %+v did not complete: the three did not run at once", s)
		}
	}
	// With a bound of 2, three children never run at once: the barrier of 3 is not met.
	bp2 := &barrierProvider{n: 3, open: make(chan struct{}), parent: scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "ok"}}})}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r2 := agent.New(agent.Deps{Provider: bp2, Delegation: &agent.Delegation{MaxConcurrent: 2}})
	res2, err := r2.Run(ctx, agent.TaskSpec{Prompt: "go", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Status != sema.StatusCancelled {
		t.Fatalf("bounded to 2, the barrier of 3 was met: %s", res2.Status)
	}
}

// steerTool steers the parent's mode from inside a child, while the child runs.
type steerTool struct {
	ctl  *agent.Control
	mode permission.Mode
}

func (s steerTool) Spec() tools.Spec {
	return tools.Spec{Name: "steer_parent", Description: "test", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: tools.EffectRead}
}

func (s steerTool) Run(ctx context.Context, _ json.RawMessage) tools.Result {
	if _, err := s.ctl.SetPermissionMode(ctx, s.mode); err != nil {
		return tools.Fail("test.steer", "%v", err)
	}
	return tools.Text("steered")
}

// The parent's live mode is the child's ceiling: a parent steered to plan while a child
// runs bounds the child's very next write.
func TestParentSteeredToPlanBoundsARunningChild(t *testing.T) {
	t.Parallel()
	for _, steer := range []bool{false, true} {
		root := t.TempDir()
		ctl := &agent.Control{}
		childTurns := []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("out.txt", "x")}}, {Text: "wrote"}}
		if steer {
			childTurns = append([]scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "steer_parent"}}}}, childTurns...)
		}
		p := scripted.New(scripted.Script{
			Turns:   []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "write", "CHILD write out.txt")}}, {Text: "done"}},
			Threads: []scripted.Thread{{Match: "CHILD", Turns: childTurns}},
		})
		r := agent.New(agent.Deps{Provider: p, Tools: []tools.Tool{steerTool{ctl: ctl, mode: permission.ModePlan}}})
		res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, PermissionMode: permission.ModeAcceptEdits, Control: ctl})
		if err != nil {
			t.Fatal(err)
		}
		_, statErr := os.Stat(filepath.Join(root, "out.txt"))
		if !steer && statErr != nil {
			t.Fatalf("calibration: under acceptEdits the child's write should land: %v (%s %v)", statErr, res.Status, res.Error)
		}
		if steer && statErr == nil {
			t.Fatalf("the parent was steered to plan, yet the child's write landed")
		}
		if steer && res.Manifest.Mode.Effective != "acceptEdits" {
			// The manifest is the leg's start; the steer came later.
			t.Fatalf("manifest mode %+v", res.Manifest.Mode)
		}
	}
}

// A custom agent's mode is clamped by the parent's live mode, and the clamp is a notice.
func TestCustomAgentModeIsClampedByTheCeiling(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".sema", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: yolo\ndescription: does anything\npermissionMode: bypassPermissions\n---\nYou may do anything.\n"
	if err := os.WriteFile(filepath.Join(dir, "yolo.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "yolo", "try", "CHILD write")}}, {Text: "done"}},
		Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{write("x.txt", "x")}}, {Text: "tried"}}}},
	})
	r := agent.New(agent.Deps{Provider: p})
	evs, res := collect(t, r.Events(context.Background(), agent.TaskSpec{Prompt: "go", Root: root}))
	if res.Status != sema.StatusCompleted {
		t.Fatalf("%s %v", res.Status, res.Error)
	}
	folded := false
	for _, ev := range evs {
		if ev.Type == agent.EventNotice && ev.ParentToolUseID == "t1" && ev.Notice.Code == permission.CodeModeFolded &&
			ev.Notice.Detail["folded_by"] == string(permission.FoldInheritedCeiling) && ev.Notice.Detail["effective"] == "default" {
			folded = true
		}
	}
	if !folded {
		t.Fatal("no inherited_ceiling notice from the child")
	}
	// Under default with nobody to ask, the child's write is refused.
	if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
		t.Fatal("the clamped child wrote without a question")
	}
	// The custom agent's prompt reached the child's system prompt.
	found := false
	for _, req := range p.Requests() {
		if strings.Contains(req.System, "You may do anything.") {
			found = true
		}
	}
	if !found {
		t.Fatal("the agent file's body is not in the child's system prompt")
	}
}

func TestTaskRefusals(t *testing.T) {
	t.Parallel()
	t.Run("unknown type lists the types", func(t *testing.T) {
		t.Parallel()
		r, _ := newRunner(t, []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "Wizard", "x", "y")}}, {Text: "ok"}})
		res, err := r.Run(context.Background(), spec(t))
		if err != nil {
			t.Fatal(err)
		}
		b := toolResults(t, res, 1)[0]
		text := tools.Result{Content: b.Content}.TextOf()
		if !b.IsError || !strings.Contains(text, `"Wizard"`) || !strings.Contains(text, "Explore") || !strings.Contains(text, "general-purpose") {
			t.Fatalf("unknown type: %v %q", b.IsError, text)
		}
	})
	t.Run("no turns left for a child", func(t *testing.T) {
		t.Parallel()
		p := scripted.New(scripted.Script{
			Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "x", "CHILD loop")}}, {Text: "ok"}},
			Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{{Name: "LS", Input: json.RawMessage(`{"path":"."}`)}}},
				{ToolCalls: []scripted.ToolCall{{Name: "LS", Input: json.RawMessage(`{"path":"."}`)}}},
				{Text: "never"}}}},
		})
		r := agent.New(agent.Deps{Provider: p})
		res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: t.TempDir(), MaxTurns: 2})
		if err != nil {
			t.Fatal(err)
		}
		// The parent used one of its two turns; the child gets the one left.
		if len(res.Subagents) != 1 || res.Subagents[0].Status != sema.StatusMaxTurns || res.Subagents[0].NumTurns != 1 {
			t.Fatalf("child %+v", res.Subagents)
		}
		b := toolResults(t, res, 1)[0]
		if !b.IsError || !strings.Contains(tools.Result{Content: b.Content}.TextOf(), "limit") {
			t.Fatalf("Task result %+v", b)
		}
	})
	t.Run("children do not delegate by default", func(t *testing.T) {
		t.Parallel()
		p := scripted.New(scripted.Script{
			Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "x", "CHILD nest")}}, {Text: "ok"}},
			Threads: []scripted.Thread{{Match: "CHILD", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{taskCall("t2", "general-purpose", "y", "GRANDCHILD")}}, {Text: "child done"}}}},
		})
		r := agent.New(agent.Deps{Provider: p})
		res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != sema.StatusCompleted || len(res.Subagents) != 1 {
			t.Fatalf("%s %+v", res.Status, res.Subagents)
		}
		for _, req := range p.Requests() {
			if strings.Contains(req.Messages[0].Content[0].Text, "CHILD") {
				for _, ts := range req.Tools {
					if ts.Name == "Task" {
						t.Fatal("a child at the depth limit was offered the Task tool")
					}
				}
			}
		}
	})
	t.Run("bad delegation deps are refused", func(t *testing.T) {
		t.Parallel()
		p := scripted.New(scripted.Script{})
		for _, deps := range []agent.Deps{
			{Provider: p, Delegation: &agent.Delegation{MaxConcurrent: -1}},
			{Provider: p, Delegation: &agent.Delegation{MaxDepth: -2}},
			{Provider: p, Delegation: &agent.Delegation{Agents: []subagent.Definition{{Name: "bad name!", Description: "x"}}}},
		} {
			_, err := agent.New(deps).Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir()})
			if sema.CodeOf(err) != agent.CodeDelegationInvalid {
				t.Errorf("%+v: %v", deps.Delegation, err)
			}
		}
	})
	t.Run("delegation off mounts no Task tool", func(t *testing.T) {
		t.Parallel()
		p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
		res, err := agent.New(agent.Deps{Provider: p, Delegation: &agent.Delegation{Off: true}}).Run(context.Background(), agent.TaskSpec{Prompt: "x", Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range res.Manifest.Tools {
			if name == "Task" {
				t.Fatal("Task mounted with delegation off")
			}
		}
	})
}

// blockingChild never answers until its context ends.
type blockingChild struct {
	parent  *scripted.Provider
	started chan struct{}
	once    sync.Once
}

func (*blockingChild) Name() string { return "blocking" }

func (b *blockingChild) Stream(ctx context.Context, req *model.Request, d func(model.Delta)) (*model.Response, error) {
	if !strings.HasPrefix(req.Messages[0].Content[0].Text, "CHILD") {
		return b.parent.Stream(ctx, req, d)
	}
	b.once.Do(func() { close(b.started) })
	<-ctx.Done()
	return nil, &sema.Error{Code: model.CodeCancelled, Message: "cancelled", Err: ctx.Err()}
}

func TestCancellingTheParentCancelsEveryChild(t *testing.T) {
	t.Parallel()
	bc := &blockingChild{started: make(chan struct{}), parent: scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{taskCall("t1", "Explore", "a", "CHILD a"), taskCall("t2", "Explore", "b", "CHILD b")}}}})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-bc.started; cancel() }()
	res, err := agent.New(agent.Deps{Provider: bc}).Run(ctx, agent.TaskSpec{Prompt: "go", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// A Task call the cancellation reached before it started runs no child at all.
	if res.Status != sema.StatusCancelled || len(res.Subagents) == 0 {
		t.Fatalf("%s %+v", res.Status, res.Subagents)
	}
	for _, s := range res.Subagents {
		if s.Status != sema.StatusCancelled {
			t.Fatalf("child %+v not cancelled", s)
		}
	}
}

// Nested delegation: a grandchild's question parks the whole chain; the answer, given
// to the root session, is claimed once there and runs the grandchild, then the child,
// then the root.
func TestNestedDelegationParksAndResumesTheWholeChain(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "plan it", "FIRST-LEVEL: get it written")}}, {Text: "root done"}},
		Threads: []scripted.Thread{
			{Match: "FIRST-LEVEL", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{taskCall("t2", "general-purpose", "write it", "SECOND-LEVEL: write deep.txt")}}, {Text: "child done"}}},
			{Match: "SECOND-LEVEL", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("deep.txt", "deep\n")}}, {Text: "grandchild done"}}},
		},
	})
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history, Delegation: &agent.Delegation{MaxDepth: 2}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, OnAsk: agent.OnAskPark})
	if err != nil {
		t.Fatal(err)
	}
	cp, parked := res.Parked()
	if !parked || cp.Subagent == nil || cp.Subagent.Nested == nil || cp.Subagent.ToolUseID != "t1" || cp.Subagent.Nested.ToolUseID != "t2" || cp.Tool != "Write" {
		t.Fatalf("parked %v: %+v", parked, cp)
	}
	spec := agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}}
	done, err := r.Resume(context.Background(), spec, agent.Answer{CheckpointID: cp.ID, Allow: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != sema.StatusCompleted || done.Result != "root done" {
		t.Fatalf("%s %q %v", done.Status, done.Result, done.Error)
	}
	if b, err := os.ReadFile(filepath.Join(root, "deep.txt")); err != nil || string(b) != "deep\n" {
		t.Fatalf("deep.txt %q %v", b, err)
	}
	if len(done.EditedFiles) != 1 {
		t.Fatalf("the grandchild's edit is not in the root's result: %v", done.EditedFiles)
	}
	// The grandchild records into the root's scope too: the root's rewind undoes it.
	if _, err := r.Rewind(context.Background(), agent.RewindSpec{SessionID: res.SessionID, ToTurn: 1, Files: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "deep.txt")); !os.IsNotExist(err) {
		t.Fatalf("deep.txt survived the root's rewind: %v", err)
	}
	if _, err := r.Resume(context.Background(), spec, agent.Answer{CheckpointID: cp.ID, Allow: true}); sema.CodeOf(err) != "checkpoint.already_claimed" {
		t.Fatalf("second answer: %v", err)
	}
}

// A plain resume of a session parked at a child's question moves past it: the Task
// call is answered as unfinished, and the kept results of its turn stay.
func TestPlainResumeMovesPastAChildsQuestion(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{taskCall("t1", "general-purpose", "write", "CHILD-W: write w.txt"), taskCall("t2", "Explore", "look", "CHILD-E: look")}},
			{Text: "moved on"},
		},
		Threads: []scripted.Thread{
			{Match: "CHILD-W", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{write("w.txt", "w")}}}},
			{Match: "CHILD-E", Turns: []scripted.Turn{{Text: "looked"}}},
		},
	})
	r := st.runner(p)
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, OnAsk: agent.OnAskPark})
	if err != nil || res.Status != sema.StatusAwaitingApproval {
		t.Fatalf("%v %+v", err, res)
	}
	done, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "never mind", Root: root, Resume: &agent.Resume{SessionID: res.SessionID}})
	if err != nil || done.Status != sema.StatusCompleted {
		t.Fatalf("%v %+v", err, done)
	}
	req := p.Requests()[len(p.Requests())-1]
	var results []string
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Kind == model.KindToolResult {
				results = append(results, b.ID+"="+tools.Result{Content: b.Content}.TextOf())
			}
		}
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "t1=The agent this call started stopped at a question") || results[1] != "t2=looked" {
		t.Fatalf("results the model saw: %q", results)
	}
	if _, err := os.Stat(filepath.Join(root, "w.txt")); !os.IsNotExist(err) {
		t.Fatal("the unanswered child's write ran")
	}
}

// A person's edit of a child's parked call is a new call, judged again by the whole fold
// — the PreToolUse hooks included — exactly as an edit of the parent's own parked call
// is (TestApproversEditIsJudgedByTheWholeFold). Calibrated: when the resumed child took
// the parent's claim as an unedited approval, only the deny rules saw the edit, and the
// hook's refused file was written.
func TestChildsEditedAnswerIsJudgedByTheWholeFold(t *testing.T) {
	t.Parallel()
	st := newStores(t)
	root := t.TempDir()
	hookSaw := 0
	var mu sync.Mutex
	refuseForbidden := func(_ context.Context, c permission.Call) (permission.HookDecision, error) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(string(c.Input), "forbidden") {
			hookSaw++
			return permission.HookDecision{Behavior: permission.Deny, Reason: "no forbidden files"}, nil
		}
		return permission.HookDecision{}, nil
	}
	p := scripted.New(scripted.Script{
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{taskCall("task_w", "general-purpose", "write notes", "GP-W: write notes.txt")}},
			{Text: "all done"},
		},
		Threads: []scripted.Thread{
			{Match: "GP-W", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{write("notes.txt", "notes\n")}},
				{Text: "child done"},
			}},
		},
	})
	r := agent.New(agent.Deps{Provider: p, Store: st.sessions, History: st.history,
		Hooks: &agent.Hooks{PreToolUse: []permission.Hook{refuseForbidden}}})
	res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "go", Root: root, OnAsk: agent.OnAskPark})
	if err != nil {
		t.Fatal(err)
	}
	cp, ok := res.Parked()
	if res.Status != sema.StatusAwaitingApproval || !ok || cp.Subagent == nil || cp.Tool != "Write" {
		t.Fatalf("status %s, checkpoint %+v: want the child's Write parked", res.Status, cp)
	}
	edit := json.RawMessage(`{"file_path":"forbidden.txt","content":"x\n"}`)
	if _, err := r.Resume(context.Background(), agent.TaskSpec{Root: root, OnAsk: agent.OnAskPark, Resume: &agent.Resume{SessionID: res.SessionID}},
		agent.Answer{CheckpointID: cp.ID, Allow: true, UpdatedInput: edit}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "forbidden.txt")); !os.IsNotExist(err) {
		t.Fatalf("the edited write the hook refuses ran in the child: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the call as first asked ran instead of the edit: %v", err)
	}
	if hookSaw == 0 {
		t.Fatal("the PreToolUse hook never saw the edited call")
	}
}
