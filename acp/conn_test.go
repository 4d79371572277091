package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// peer is the client's end of a pipe pair whose other end an Agent serves.
type peer struct {
	t    testing.TB
	w    *os.File
	r    *bufio.Reader
	done chan error
}

// answer is one message the agent wrote, read loosely.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

func startAgent(t testing.TB, opts Options) *peer {
	t.Helper()
	// Pipes of the system, with its buffer, as an editor's stdio is: with io.Pipe every
	// write waits for its read, and a notification the agent writes while the test
	// waits for it to read a reply would hold both.
	ar, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cr, aw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if opts.NewID == nil {
		n := 0
		opts.NewID = func() string { n++; return "s" + string(rune('0'+n)) }
	}
	p := &peer{t: t, w: cw, r: bufio.NewReader(cr), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), opts, ar, aw)
		aw.Close()
		p.done <- err
	}()
	t.Cleanup(func() {
		cw.Close()
		go io.Copy(io.Discard, cr) // let the agent finish writing
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Error("the agent did not stop after stdin closed")
		}
	})
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

func (p *peer) sendJSON(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(string(b))
}

// next reads the agent's next message; it fails the test after 10 s.
func (p *peer) next() answer {
	p.t.Helper()
	type got struct {
		line []byte
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		l, err := p.r.ReadBytes('\n')
		ch <- got{l, err}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			p.t.Fatalf("read: %v", g.err)
		}
		var a answer
		if err := json.Unmarshal(g.line, &a); err != nil {
			p.t.Fatalf("the agent wrote a line that is not JSON: %q", g.line)
		}
		if a.JSONRPC != "2.0" {
			p.t.Fatalf("the agent wrote a message without jsonrpc 2.0: %s", g.line)
		}
		return a
	case <-time.After(10 * time.Second):
		p.t.Fatal("no message from the agent in 10 s")
	}
	return answer{}
}

// until reads messages up to the answer to id, returning the ones before it.
func (p *peer) until(id string) (answer, []answer) {
	p.t.Helper()
	var before []answer
	for {
		a := p.next()
		if a.Method == "" && string(a.ID) == id {
			return a, before
		}
		before = append(before, a)
	}
}

func (p *peer) initialize() {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}`)
	if a, _ := p.until(`"init"`); a.Error != nil {
		p.t.Fatalf("initialize: %v", a.Error)
	}
}

func TestMalformedLinesAreAnsweredAndTheConnectionSurvives(t *testing.T) {
	p := startAgent(t, Options{Open: func(context.Context, SessionSetup) (*Session, error) {
		return nil, sema.Errorf("config.test", "no sessions in this test")
	}})
	cases := []struct {
		name string
		line string
		code int
		id   string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,`, CodeParseError, "null"},
		{"garbage", `hello`, CodeParseError, "null"},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, CodeInvalidRequest, "null"},
		{"a string", `"initialize"`, CodeInvalidRequest, "null"},
		{"no jsonrpc", `{"id":2,"method":"initialize","params":{"protocolVersion":1}}`, CodeInvalidRequest, "2"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"initialize","params":{"protocolVersion":1}}`, CodeInvalidRequest, "3"},
		{"an object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, CodeInvalidRequest, "null"},
		{"a numeric method", `{"jsonrpc":"2.0","id":4,"method":7}`, CodeInvalidRequest, "4"},
		{"an empty method", `{"jsonrpc":"2.0","id":5,"method":""}`, CodeInvalidRequest, "5"},
		{"neither method nor answer", `{"jsonrpc":"2.0","id":6}`, CodeInvalidRequest, "6"},
		{"params a string", `{"jsonrpc":"2.0","id":7,"method":"initialize","params":"x"}`, CodeInvalidRequest, "7"},
		{"a request with a result", `{"jsonrpc":"2.0","id":8,"method":"initialize","result":{}}`, CodeInvalidRequest, "8"},
		{"an unknown method", `{"jsonrpc":"2.0","id":9,"method":"session/fly","params":{}}`, CodeMethodNotFound, "9"},
		{"an extension method", `{"jsonrpc":"2.0","id":"x","method":"_zed/thing","params":{}}`, CodeMethodNotFound, `"x"`},
		{"session/new before initialize", `{"jsonrpc":"2.0","id":10,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`, CodeInvalidRequest, "10"},
		{"initialize without params", `{"jsonrpc":"2.0","id":11,"method":"initialize"}`, CodeInvalidParams, "11"},
		{"initialize without a version", `{"jsonrpc":"2.0","id":12,"method":"initialize","params":{}}`, CodeInvalidParams, "12"},
		{"initialize with a string version", `{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"protocolVersion":"1"}}`, CodeInvalidParams, "13"},
		{"authenticate", `{"jsonrpc":"2.0","id":14,"method":"authenticate","params":{"methodId":"x"}}`, CodeInvalidRequest, "14"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p.t = t
			p.send(c.line)
			a := p.next()
			if a.Error == nil {
				t.Fatalf("answered %s, want error %d", a.Result, c.code)
			}
			if a.Error.Code != c.code || string(a.ID) != c.id {
				t.Fatalf("answered id %s error %d (%s), want id %s error %d", a.ID, a.Error.Code, a.Error.Message, c.id, c.code)
			}
			if a.Error.Message == "" {
				t.Fatal("the error says nothing")
			}
		})
	}
	p.t = t
	// The connection survived all of it.
	p.initialize()
	after := []struct {
		name, line string
		code       int
	}{
		{"session/new without cwd", `{"jsonrpc":"2.0","id":20,"method":"session/new","params":{"mcpServers":[]}}`, CodeInvalidParams},
		{"session/new in a relative cwd", `{"jsonrpc":"2.0","id":26,"method":"session/new","params":{"cwd":"src","mcpServers":[]}}`, CodeInvalidParams},
		{"session/load without a session", `{"jsonrpc":"2.0","id":27,"method":"session/load","params":{"cwd":"/tmp","mcpServers":[]}}`, CodeInvalidParams},
		{"session/new refused by the command line", `{"jsonrpc":"2.0","id":21,"method":"session/new","params":{"cwd":"/nowhere","mcpServers":[]}}`, CodeInvalidParams},
		{"a prompt in an unknown session", `{"jsonrpc":"2.0","id":22,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, CodeResourceNotFound},
		{"a prompt without blocks", `{"jsonrpc":"2.0","id":23,"method":"session/prompt","params":{"sessionId":"nope"}}`, CodeInvalidParams},
		{"set_mode in an unknown session", `{"jsonrpc":"2.0","id":24,"method":"session/set_mode","params":{"sessionId":"nope","modeId":"plan"}}`, CodeResourceNotFound},
		{"an MCP server of an unknown transport", `{"jsonrpc":"2.0","id":25,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"type":"ws","name":"x","url":"ws://x"}]}}`, CodeInvalidParams},
	}
	for _, c := range after {
		p.send(c.line)
		a := p.next()
		if a.Error == nil || a.Error.Code != c.code {
			t.Errorf("%s: answered %+v %s, want error %d", c.name, a.Error, a.Result, c.code)
		}
	}
	// A notification is never answered, known or not: the next answer is the next request's.
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}`)
	p.send(`{"jsonrpc":"2.0","method":"_zed/whatever"}`)
	p.send(`{"jsonrpc":"2.0","id":"last","method":"nothing"}`)
	if a := p.next(); string(a.ID) != `"last"` {
		t.Fatalf("a notification was answered: %+v", a)
	}
}

func TestALineOverTheLimitIsAParseError(t *testing.T) {
	p := startAgent(t, Options{})
	go func() {
		p.w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`))
		chunk := []byte(strings.Repeat("a", 1<<20))
		for i := 0; i < MaxLine>>20+1; i++ {
			p.w.Write(chunk)
		}
		p.w.Write([]byte("\"}}\n"))
	}()
	a := p.next()
	if a.Error == nil || a.Error.Code != CodeParseError {
		t.Fatalf("answered %+v, want a parse error", a)
	}
	p.initialize()
}

// fakeBackend runs a prompt by calling run with the leg's approver and emit.
type fakeBackend struct {
	approver permission.Approver
	run      func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event))
	mu       sync.Mutex
	mode     permission.Mode
}

func (b *fakeBackend) Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error {
	b.run(ctx, prompt, b.approver, emit)
	return nil
}

func (b *fakeBackend) SetMode(_ context.Context, m permission.Mode) (permission.Mode, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mode = m
	return m, nil
}

func result(st sema.Status) agent.Event {
	return agent.Event{Type: agent.EventResult, Result: &agent.TaskResult{Status: st}}
}

// askBash asks the approver about a Bash call and reports the answer as events.
func askBash(ctx context.Context, ap permission.Approver, emit func(agent.Event), command string) permission.ApprovalDecision {
	input, _ := json.Marshal(map[string]string{"command": command})
	emit(agent.Event{Type: agent.EventToolUse, ToolUse: &agent.ToolUse{ID: "call-" + command, Name: "Bash", Input: input}})
	d, _ := ap.Approve(ctx, permission.ApprovalRequest{Tool: "Bash", Input: input, ToolUseID: "call-" + command, Ask: permission.Decision{Reason: "Bash needs permission"}})
	if d.Behavior == permission.Allow {
		emit(agent.Event{Type: agent.EventToolResult, ToolResult: &agent.ToolResult{ID: "call-" + command, Name: "Bash", Text: "ran"}})
	}
	return d
}

func sessionAgent(t *testing.T, b *fakeBackend) *peer {
	return startAgent(t, Options{
		Rule: func(r permission.ApprovalRequest) string { return "Bash(" + string(r.Input) + ")" },
		Open: func(_ context.Context, s SessionSetup) (*Session, error) {
			b.approver = s.Approver
			return &Session{Backend: b, Root: s.Cwd, Store: session.NewMemory()}, nil
		},
	})
}

func TestPromptAsksThePermissionsThroughTheClient(t *testing.T) {
	var decisions []permission.ApprovalDecision
	b := &fakeBackend{run: func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event)) {
		emit(agent.Event{Type: agent.EventText, Text: "on it"})
		decisions = append(decisions, askBash(ctx, ap, emit, "make"))
		emit(result(sema.StatusCompleted))
	}}
	p := sessionAgent(t, b)
	p.initialize()
	// session/new and the prompt in it come without waiting: the prompt finds the session.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"build"}]}}`)
	choose := func(option string) {
		t.Helper()
		for {
			a := p.next()
			if a.Method != MethodRequestPermission {
				continue
			}
			var req RequestPermissionRequest
			if err := json.Unmarshal(a.Params, &req); err != nil {
				t.Fatal(err)
			}
			if req.SessionID != "s1" || req.ToolCall.ToolCallID != "call-make" || req.ToolCall.Kind != "execute" || len(req.Options) != 4 {
				t.Fatalf("permission request %s", a.Params)
			}
			p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": a.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": option}}})
			return
		}
	}
	choose(OptionRejectAlways)
	if a, _ := p.until("2"); string(a.Result) != `{"stopReason":"end_turn"}` {
		t.Fatalf("prompt answered %s %v", a.Result, a.Error)
	}
	// Rejected always: the next prompt's same question is answered without asking.
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"again"}]}}`)
	_, before := p.until("3")
	for _, a := range before {
		if a.Method == MethodRequestPermission {
			t.Fatalf("a question rejected always was asked again: %s", a.Params)
		}
	}
	if len(decisions) != 2 || decisions[0].Behavior != permission.Deny || decisions[1].Behavior != permission.Deny {
		t.Fatalf("decisions %+v, want two denials", decisions)
	}
}

func TestCancelEndsTheOpenQuestionAndThePrompt(t *testing.T) {
	decided := make(chan permission.ApprovalDecision, 1)
	b := &fakeBackend{run: func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event)) {
		decided <- askBash(ctx, ap, emit, "rm")
		emit(result(sema.StatusCancelled))
	}}
	p := sessionAgent(t, b)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.until("1")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"clean"}]}}`)
	for a := p.next(); a.Method != MethodRequestPermission; a = p.next() {
	}
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	if d := <-decided; d.Behavior != permission.Deny {
		t.Fatalf("a cancelled question was answered %+v", d)
	}
	if a, _ := p.until("2"); string(a.Result) != `{"stopReason":"cancelled"}` {
		t.Fatalf("prompt answered %s %v", a.Result, a.Error)
	}
}

// A client that goes away with a question open: the approver defers it
// (permission.ErrDefer), which the run parks for a later answer; nothing is allowed, and
// the leg is not cancelled under the open question (it goes on to park).
func TestAClientThatGoesAwayMidQuestionDefersIt(t *testing.T) {
	type answer struct {
		d         permission.ApprovalDecision
		err       error
		cancelled bool
	}
	decided := make(chan answer, 1)
	b := &fakeBackend{run: func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event)) {
		input, _ := json.Marshal(map[string]string{"command": "deploy"})
		emit(agent.Event{Type: agent.EventToolUse, ToolUse: &agent.ToolUse{ID: "call-deploy", Name: "Bash", Input: input}})
		d, err := ap.Approve(ctx, permission.ApprovalRequest{Tool: "Bash", Input: input, ToolUseID: "call-deploy", Ask: permission.Decision{Reason: "Bash needs permission"}})
		decided <- answer{d, err, ctx.Err() != nil}
		emit(result(sema.StatusAwaitingApproval))
	}}
	p := sessionAgent(t, b)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.until("1")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"ship"}]}}`)
	for a := p.next(); a.Method != MethodRequestPermission; a = p.next() {
	}
	p.w.Close()
	go io.Copy(io.Discard, p.r)
	select {
	case a := <-decided:
		if !errors.Is(a.err, permission.ErrDefer) || a.d.Behavior == permission.Allow || a.cancelled {
			t.Fatalf("the question was answered %+v, %v (leg cancelled %v) after the client left; want it deferred under a live leg", a.d, a.err, a.cancelled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the question stayed open after the client left")
	}
	if d, ok := b.approver.(permission.Deferring); !ok || !d.MayDefer() {
		t.Error("the session's approver does not say it may defer")
	}
	if err := <-p.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	p.done <- nil // for the cleanup
}

func TestPromptBlocks(t *testing.T) {
	text := "package main\n"
	ok, images, err := promptContent([]ContentBlock{TextBlock("explain"), {Type: "image", Data: "iVBORw0KGgo=", MIMEType: "image/png"}, {Type: "resource_link", URI: "file:///w/my%20a.go", Name: "my a.go"},
		{Type: "resource_link", URI: "https://example.com/spec", Name: "spec"},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///w/b.go", Text: &text}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].MediaType != "image/png" || string(images[0].Data) != "\x89PNG\r\n\x1a\n" {
		t.Errorf("the image block became %+v", images)
	}
	for _, want := range []string{"explain", "Referenced file: /w/my a.go", "Referenced: spec <https://example.com/spec>", "<context ref=\"/w/b.go\">\npackage main\n"} {
		if !strings.Contains(ok, want) {
			t.Errorf("prompt %q lacks %q", ok, want)
		}
	}
	blob := "AAAA"
	for name, blocks := range map[string][]ContentBlock{
		"not base64":    {{Type: "image", Data: "@@@", MIMEType: "image/png"}},
		"no image data": {TextBlock("look"), {Type: "image", MIMEType: "image/png"}},
		"audio":         {TextBlock("hear"), {Type: "audio", Data: "AAAA", MIMEType: "audio/wav"}},
		"a blob":        {{Type: "resource", Resource: &EmbeddedResource{URI: "file:///x.bin", Blob: &blob}}},
		"an empty text": {TextBlock("  ")},
		"no blocks":     {},
		"unknown":       {{Type: "video"}},
		"a bare link":   {{Type: "resource_link"}},
	} {
		if _, _, err := promptContent(blocks); err == nil {
			t.Errorf("%s: accepted", name)
		} else if e, ok := err.(*Error); !ok || e.Code != CodeInvalidParams {
			t.Errorf("%s: %v, want invalid params", name, err)
		}
	}
}

func TestModesListTheModeTheSessionStartedIn(t *testing.T) {
	for _, c := range []struct {
		start  permission.Mode
		bypass bool
		want   string
	}{
		{"", false, "default:default,acceptEdits,plan"},
		{permission.ModePlan, false, "plan:default,acceptEdits,plan"},
		{permission.ModeBypassPermissions, true, "bypassPermissions:default,acceptEdits,plan,bypassPermissions"},
		{permission.ModeDontAsk, false, "dontAsk:default,acceptEdits,plan,dontAsk"},
	} {
		p := startAgent(t, Options{Bypass: c.bypass, Open: func(_ context.Context, s SessionSetup) (*Session, error) {
			return &Session{Backend: &fakeBackend{}, Root: s.Cwd, Mode: c.start}, nil
		}})
		p.initialize()
		p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
		a, _ := p.until("1")
		var r NewSessionResponse
		if err := json.Unmarshal(a.Result, &r); err != nil || r.Modes == nil {
			t.Fatalf("session/new answered %s %v", a.Result, a.Error)
		}
		var ids []string
		for _, m := range r.Modes.AvailableModes {
			ids = append(ids, m.ID)
		}
		if got := r.Modes.CurrentModeID + ":" + strings.Join(ids, ","); got != c.want {
			t.Errorf("started in %q: modes %s, want %s", c.start, got, c.want)
		}
		// The commands follow the answer, once the client knows the session's id.
		if u := p.next(); u.Method != MethodSessionUpdate || !strings.Contains(string(u.Params), `"availableCommands":[]`) {
			t.Errorf("after session/new's answer: %s %s, want available_commands_update", u.Method, u.Params)
		}
	}
}

func TestAPlanReviewIsAskedWithThePlanAndNoAlways(t *testing.T) {
	var decisions []permission.ApprovalDecision
	b := &fakeBackend{run: func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event)) {
		for range 2 {
			d, _ := ap.Approve(ctx, permission.ApprovalRequest{Tool: "ExitPlanMode", Input: json.RawMessage(`{"plan":"1. read\n2. fix"}`), ToolUseID: "plan-1",
				Ask: permission.Decision{Reason: "Leave plan mode?", PersonOnly: true}})
			decisions = append(decisions, d)
		}
		emit(result(sema.StatusCompleted))
	}}
	p := sessionAgent(t, b)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"plan it"}]}}`)
	asked := 0
	for {
		a := p.next()
		if a.Method == "" && string(a.ID) == "2" {
			break
		}
		if a.Method != MethodRequestPermission {
			continue
		}
		asked++
		var req RequestPermissionRequest
		if err := json.Unmarshal(a.Params, &req); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, o := range req.Options {
			kinds = append(kinds, o.Kind)
		}
		if strings.Join(kinds, ",") != "allow_once,reject_once" || !strings.Contains(string(a.Params), `1. read\n2. fix`) {
			t.Fatalf("plan review asked %s", a.Params)
		}
		// "Always" is not offered; a client that sends it anyway is not taken at its word.
		p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": a.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": OptionAllowAlways}}})
	}
	if asked != 2 || len(decisions) != 2 || decisions[0].Behavior != permission.Deny || decisions[1].Behavior != permission.Deny {
		t.Fatalf("asked %d times, decisions %+v: want two questions, each refused", asked, decisions)
	}
}

func TestACancelRightAfterThePromptIsNotLost(t *testing.T) {
	b := &fakeBackend{run: func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event)) {
		select {
		case <-ctx.Done():
			emit(result(sema.StatusCancelled))
		case <-time.After(5 * time.Second):
			emit(result(sema.StatusCompleted)) // the cancel was lost
		}
	}}
	p := sessionAgent(t, b)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	p.until("1")
	// Both lines in one write: the cancel is read before the prompt's handler may run.
	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}` + "\n" +
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	if a, _ := p.until("2"); string(a.Result) != `{"stopReason":"cancelled"}` {
		t.Fatalf("prompt answered %s %v, want cancelled", a.Result, a.Error)
	}
	// A cancel with no prompt in flight cancels nothing later.
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	b.run = func(ctx context.Context, prompt string, ap permission.Approver, emit func(agent.Event)) {
		emit(result(sema.StatusCompleted))
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}`)
	if a, _ := p.until("3"); string(a.Result) != `{"stopReason":"end_turn"}` {
		t.Fatalf("the next prompt answered %s %v, want end_turn", a.Result, a.Error)
	}
}
