package tui

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/server"
)

// service starts a `sema serve` on SQLite in a temporary state directory with script
// as its model, and returns a client of one tenant whose base is the returned directory.
func service(t *testing.T, script func(base string) []scripted.Turn) (*client.Client, string) {
	t.Helper()
	return serviceWith(t, func(base string) model.Provider { return scripted.New(scripted.Script{Turns: script(base)}) })
}

// serviceWith is service with the model provider made from the tenant's base.
func serviceWith(t *testing.T, provider func(base string) model.Provider) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := provider(base)
	cfg := server.Config{Home: t.TempDir(), Poll: 20 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenProvider: func(string) (model.Provider, string, error) { return p, "scripted", nil }}
	srv, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
	})
	tok, err := srv.CreateToken(ctx, "acme", base, server.TenantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return client.New(hs.URL, tok), base
}

func writeTurn(path, content string) scripted.Turn {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "Write", Input: b}}}
}

// answering answers each question the approver shows with the next of choices, as the
// dialog does, and records the questions.
func answering(t *testing.T, a *Approver, choices ...Choice) (asked func() []permission.ApprovalRequest) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var reqs []permission.ApprovalRequest
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case msg := <-a.inbox:
				q, ok := msg.(QuestionMsg)
				if !ok {
					continue
				}
				mu.Lock()
				c := ChoiceDeny
				if len(reqs) < len(choices) {
					c = choices[len(reqs)]
				}
				reqs = append(reqs, q.Request)
				mu.Unlock()
				q.answer(c)
			}
		}
	}()
	return func() []permission.ApprovalRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]permission.ApprovalRequest(nil), reqs...)
	}
}

// prompt runs one prompt and returns its events.
func prompt(t *testing.T, r *Remote, text string) []agent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []agent.Event
	if err := r.Prompt(ctx, text, func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != agent.EventResult {
		t.Fatalf("prompt %q: the last event is not the result: %+v", text, evs)
	}
	return evs
}

func saidText(evs []agent.Event) string {
	var parts []string
	for _, ev := range evs {
		if ev.Type == agent.EventAssistant && ev.Message != nil {
			parts = append(parts, blockText(ev.Message, model.KindText))
		}
	}
	return strings.Join(parts, "|")
}

// One session on a service: a prompt streams its answer, a parked write approved through
// the approver is written, a denied one is not, and each prompt continues the session
// the first one created.
func TestRemoteOverAService(t *testing.T) {
	c, base := service(t, func(base string) []scripted.Turn {
		return []scripted.Turn{
			{Text: "hello from the service"},
			writeTurn(filepath.Join(base, "yes.txt"), "approved\n"), {Text: "wrote it"},
			writeTurn(filepath.Join(base, "no.txt"), "denied\n"), {Text: "did not write"},
		}
	})
	a := NewApprover()
	asked := answering(t, a, ChoiceAllowOnce, ChoiceDeny)
	r := NewRemote(c, client.TaskSpec{Cwd: base}, a)

	evs := prompt(t, r, "say hello")
	if got := saidText(evs); got != "hello from the service" {
		t.Fatalf("answer %q", got)
	}
	if evs[0].Type != agent.EventInit || evs[0].Manifest == nil || evs[0].Manifest.Mode.Effective != "default" {
		t.Fatalf("first event %+v, want the leg's manifest", evs[0])
	}
	res := evs[len(evs)-1].Result
	if res.Status != sema.StatusCompleted || res.TotalCostUSD == nil && res.Usage.OutputTokens == 0 {
		t.Fatalf("result %+v", res)
	}
	session := r.Session()
	if session == "" || res.SessionID != session {
		t.Fatalf("session %q, result's %q", session, res.SessionID)
	}

	evs = prompt(t, r, "write yes.txt")
	if b, err := os.ReadFile(filepath.Join(base, "yes.txt")); err != nil || string(b) != "approved\n" {
		t.Fatalf("the approved write: %q, %v", b, err)
	}
	if q := asked(); len(q) != 1 || q[0].Tool != "Write" || !strings.Contains(string(q[0].Input), "yes.txt") || !strings.Contains(q[0].Ask.Reason, "Write") {
		t.Fatalf("questions %+v", q)
	}
	if got := saidText(evs); got != "|wrote it" {
		t.Fatalf("answer %q", got)
	}
	results := 0
	for _, ev := range evs {
		if ev.Type == agent.EventResult {
			results++
		}
	}
	if results != 1 || evs[len(evs)-1].Result.Status != sema.StatusCompleted {
		t.Fatalf("%d results, last %+v: a parked leg's result is not the prompt's", results, evs[len(evs)-1].Result)
	}

	evs = prompt(t, r, "write no.txt")
	if _, err := os.Stat(filepath.Join(base, "no.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the denied write ran: %v", err)
	}
	denied := false
	for _, ev := range evs {
		if ev.Type == agent.EventPermission && ev.Denial != nil && ev.Denial.Tool == "Write" {
			denied = true
		}
	}
	if !denied || len(asked()) != 2 || saidText(evs) != "|did not write" {
		t.Fatalf("denial shown %v, questions %d, answer %q", denied, len(asked()), saidText(evs))
	}
	if r.Session() != session || evs[len(evs)-1].Result.SessionID != session {
		t.Fatalf("the later prompts ran in %q, not the first prompt's session %q", r.Session(), session)
	}
}

// A mode chosen while nothing runs is the next task's; the service reports it in force.
func TestRemoteModeIsTheNextTasks(t *testing.T) {
	c, base := service(t, func(base string) []scripted.Turn {
		return []scripted.Turn{writeTurn(filepath.Join(base, "a.txt"), "a\n"), {Text: "done"}}
	})
	a := NewApprover()
	asked := answering(t, a)
	r := NewRemote(c, client.TaskSpec{Cwd: base}, a)
	if m, err := r.SetMode(context.Background(), permission.ModeAcceptEdits); err != nil || m != permission.ModeAcceptEdits {
		t.Fatalf("SetMode: %v, %v", m, err)
	}
	evs := prompt(t, r, "write a.txt")
	if evs[0].Manifest == nil || evs[0].Manifest.Mode.Effective != string(permission.ModeAcceptEdits) {
		t.Fatalf("first event %+v, want acceptEdits in force", evs[0])
	}
	if _, err := os.Stat(filepath.Join(base, "a.txt")); err != nil || len(asked()) != 0 {
		t.Fatalf("acceptEdits: file %v, questions %d", err, len(asked()))
	}
}

// A prompt the service refuses (a root outside the tenant's base) fails before it starts,
// with the service's code.
func TestRemoteRefusedPrompt(t *testing.T) {
	c, _ := service(t, func(string) []scripted.Turn { return nil })
	r := NewRemote(c, client.TaskSpec{Cwd: t.TempDir()}, nil)
	err := r.Prompt(context.Background(), "hi", func(agent.Event) { t.Error("an event of a refused prompt") })
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "tenant.root_outside_base" {
		t.Fatalf("err %v", err)
	}
}

// The screen over a service: the parked write is the dialog, key 1 allows it, the file
// is written and the answer shown; Shift+Tab's mode is the next task's.
func TestRemoteScreen(t *testing.T) {
	c, base := service(t, func(base string) []scripted.Turn {
		return []scripted.Turn{writeTurn(filepath.Join(base, "out.txt"), "from the screen\n"), {Text: "wrote out.txt"}}
	})
	a := NewApprover()
	h := newHarness(t, Options{Backend: NewRemote(c, client.TaskSpec{Cwd: base}, a), Approver: a}, 80, 24)
	h.typeText("write out.txt", true)
	h.until("the dialog", func() bool { return h.m.question != nil })
	if q := h.m.question.Request; q.Tool != "Write" || !strings.Contains(h.frame(), "out.txt") {
		t.Fatalf("question %+v; frame:\n%s", q, h.frame())
	}
	h.typeText("1", false)
	h.until("the answer", func() bool { return h.idle() && strings.Contains(h.frame(), "wrote out.txt") })
	if b, err := os.ReadFile(filepath.Join(base, "out.txt")); err != nil || string(b) != "from the screen\n" {
		t.Fatalf("the allowed write: %q, %v", b, err)
	}
	if h.m.usage.OutputTokens == 0 || h.m.facts.lastInput != 0 {
		t.Fatalf("usage %+v, context fill %d: the task's totals count in the tokens, not as one request", h.m.usage, h.m.facts.lastInput)
	}
	if strings.Contains(h.frame(), "awaiting_approval") {
		t.Fatalf("the parked leg's end is shown as the turn's:\n%s", h.frame())
	}
}

// A prompt interrupted while its question is open cancels the task on the service: the
// call does not run and the prompt ends with a cancelled result.
func TestRemoteInterruptCancelsTheTask(t *testing.T) {
	c, base := service(t, func(base string) []scripted.Turn {
		return []scripted.Turn{writeTurn(filepath.Join(base, "never.txt"), "x\n"), {Text: "done"}}
	})
	a := NewApprover() // nobody answers: the question stays open until the interrupt
	r := NewRemote(c, client.TaskSpec{Cwd: base}, a)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-a.inbox:
			cancel()
		case <-time.After(20 * time.Second):
			cancel()
		}
	}()
	var evs []agent.Event
	if err := r.Prompt(ctx, "write never.txt", func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Type != agent.EventResult || last.Result.Status != sema.StatusCancelled {
		t.Fatalf("last event %+v, want a cancelled result", last.Result)
	}
	if _, err := os.Stat(filepath.Join(base, "never.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted call ran: %v", err)
	}
	if open, err := c.Checkpoints(context.Background(), "open"); err != nil || len(open) != 0 {
		t.Fatalf("open checkpoints after the interrupt: %+v, %v", open, err)
	}
	sessions, err := c.Sessions(context.Background())
	if err != nil || len(sessions) != 1 || sessions[0].ID != r.Session() {
		t.Fatalf("sessions %+v, %v", sessions, err)
	}
}

// pieceByPiece answers with its pieces of text as a streaming model does, once release
// is closed (the test closes it when the prompt's stream is connected).
type pieceByPiece struct {
	pieces  []string
	release chan struct{}
}

func (p *pieceByPiece) Name() string { return "pieces" }

func (p *pieceByPiece) Stream(ctx context.Context, _ *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for _, s := range p.pieces {
		onDelta(model.Delta{Kind: model.DeltaText, Text: s})
	}
	return &model.Response{Model: "pieces", Content: []model.Block{model.TextBlock(strings.Join(p.pieces, ""))},
		StopReason: model.StopEndTurn, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

// TestRemoteStreamsTheAnswer: over a service, the answer reaches the screen piece by
// piece as the model writes it, before the whole response, and the screen shows it once.
func TestRemoteStreamsTheAnswer(t *testing.T) {
	p := &pieceByPiece{pieces: []string{"The ", "answer ", "is ", "42."}, release: make(chan struct{})}
	c, base := serviceWith(t, func(string) model.Provider { return p })
	r := NewRemote(c, client.TaskSpec{Cwd: base}, NewApprover())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []agent.Event
	var once sync.Once
	err := r.Prompt(ctx, "what is it?", func(ev agent.Event) {
		once.Do(func() { close(p.release) }) // the stream is connected: its first event came
		evs = append(evs, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	assistant := -1
	for i, ev := range evs {
		switch {
		case ev.Type == agent.EventText:
			if assistant >= 0 {
				t.Errorf("a piece after the whole response: %q", ev.Text)
			}
			pieces = append(pieces, ev.Text)
		case ev.Type == agent.EventAssistant && ev.Message != nil && assistant < 0:
			assistant = i
		}
	}
	if got := strings.Join(pieces, ""); got != "The answer is 42." || len(pieces) < 2 {
		t.Fatalf("the pieces %q; want the answer in pieces before the response", pieces)
	}
	m := New(context.Background(), Options{Backend: &fakeBackend{}})
	m.width, m.height = 80, 24
	for _, ev := range evs {
		m.event(ev)
	}
	if f := ansi.Strip(m.View().Content); strings.Count(f, "The answer is 42.") != 1 {
		t.Errorf("the screen shows the answer %d times:\n%s", strings.Count(f, "The answer is 42."), f)
	}
}

// holdFirst holds the model's first answer until open is closed.
type holdFirst struct {
	model.Provider
	open, waiting chan struct{}
	once          sync.Once
}

func (h *holdFirst) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	first := false
	h.once.Do(func() { first = true; close(h.waiting) })
	if first {
		select {
		case <-h.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Provider.Stream(ctx, req, onDelta)
}

// TestRemoteModeChangesTheRunningTask: Shift+Tab while a task runs on the service changes
// that task's mode, not only the next one's: switched to acceptEdits while the model
// thinks, the write it then asks for runs without a question.
func TestRemoteModeChangesTheRunningTask(t *testing.T) {
	var h *holdFirst
	c, base := serviceWith(t, func(base string) model.Provider {
		h = &holdFirst{Provider: scripted.New(scripted.Script{Turns: []scripted.Turn{writeTurn(filepath.Join(base, "a.txt"), "a\n"), {Text: "done"}}}),
			open: make(chan struct{}), waiting: make(chan struct{})}
		return h
	})
	a := NewApprover()
	asked := answering(t, a)
	r := NewRemote(c, client.TaskSpec{Cwd: base}, a)
	done := make(chan []agent.Event)
	go func() { done <- prompt(t, r, "write a.txt") }()
	<-h.waiting
	if m, err := r.SetMode(context.Background(), permission.ModeAcceptEdits); err != nil || m != permission.ModeAcceptEdits {
		t.Fatalf("SetMode while the task runs: %v, %v", m, err)
	}
	close(h.open)
	evs := <-done
	if _, err := os.Stat(filepath.Join(base, "a.txt")); err != nil || len(asked()) != 0 {
		t.Fatalf("after the switch to acceptEdits: file %v, %d questions", err, len(asked()))
	}
	if res := evs[len(evs)-1].Result; res.Status != sema.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
}
