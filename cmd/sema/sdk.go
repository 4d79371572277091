package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/history"
	"github.com/sema-agent/sema/hooks"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// The Agent SDK protocol: the Claude Agent SDKs start their executable with
//
//	--output-format stream-json --verbose --input-format stream-json [--flag=value …]
//
// and no prompt. Every line on stdin and stdout is one JSON object. The SDK writes an
// initialize control request, then user messages (one per turn), control requests
// (interrupt, set_permission_mode, …) at any time, and the answers to sema's own
// control requests (can_use_tool, hook_callback). sema answers every control request —
// an unknown one with an error, never silence — runs one task leg per user message in
// one session, and writes the SDK's message shapes: system/init, assistant, user (tool
// results), stream_event (--include-partial-messages), system/permission_denied and a
// result per turn. The end of stdin ends the session: the turns still queued run, then
// sema exits (1 when the last result was an error, as the reference does).

// Codes of the SDK protocol.
const (
	// codeSDKUnsupported refuses a control request, an initialize field or a flag sema
	// does not implement.
	codeSDKUnsupported = "sdk.unsupported"
	// codeSDKMalformed refuses a line that is not one JSON object of the protocol.
	codeSDKMalformed = "sdk.malformed"
)

// sdkMaxLine bounds one stdin line (a user message may carry images as base64).
const sdkMaxLine = 64 << 20

// sdkMode reports whether the command line is the SDK's launch line: stream-json in
// and out, and no prompt.
func sdkMode(o *runOptions, prompt string) bool {
	return prompt == "" && o.inputFormat == "stream-json" && o.outputFormat == "stream-json"
}

// sdkSession is one SDK process: its stdin reader, its stdout writer and the turns
// it runs.
type sdkSession struct {
	o       *runOptions
	stderr  io.Writer
	out     *sdkOut
	setup   *sdkSetup
	started time.Time

	mu sync.Mutex
	// sessionID is the session the turns continue; empty before the first turn.
	sessionID string
	// mode is a permission mode asked for between turns, for the next one.
	mode permission.Mode
	// modelRef is the model the next turn uses (set_model changes it).
	modelRef string
	// turn is the running turn; nil between turns.
	turn *sdkTurn
	// pending are sema's control requests waiting for their answers, by request id.
	pending map[string]chan sdkAnswer
	nextID  int
	// inputClosed is set when stdin ended: no answer can come any more.
	inputClosed bool
	// init is what the initialize request brought.
	init sdkInit
	// allowed are the rules the SDK's answers added for the session (updatedPermissions
	// with destination session), for the turns that follow.
	allowed []string
	// lastServers is the MCP servers' state at the last turn's start.
	lastServers any

	queue   chan sdkUserMessage
	readErr error
}

// sdkTurn is a running turn.
type sdkTurn struct {
	cancel  context.CancelCauseFunc
	control *agent.Control
}

// errInterrupted is the cause of a turn the SDK interrupted.
var errInterrupted = errors.New("[Request interrupted by user]")

// sdkAnswer is the answer to one of sema's control requests.
type sdkAnswer struct {
	ok       bool
	response json.RawMessage
	err      string
}

// sdkInit is what sema applies of an initialize request.
type sdkInit struct {
	systemPrompt, appendPrompt string
	hooks                      []hooks.Hook
	mcpJSON                    string
	disallowed                 []string
}

// sdkUserMessage is a user line: the prompt of one turn.
type sdkUserMessage struct {
	text   string
	images []agent.Image
	err    error
}

// sdkOut writes protocol lines, one at a time.
type sdkOut struct {
	mu  sync.Mutex
	w   io.Writer
	enc *json.Encoder
}

func newSDKOut(w io.Writer) *sdkOut {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &sdkOut{w: w, enc: enc}
}

func (o *sdkOut) write(v any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.enc.Encode(v)
}

// runSDK serves the SDK protocol on stdin and stdout until stdin ends.
func runSDK(ctx context.Context, o *runOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	setup, err := prepareSDK(ctx, o, stderr)
	if err != nil {
		return err
	}
	o.sdk.noteIgnored(stderr)
	defer setup.close()
	s := &sdkSession{o: o, stderr: stderr, out: newSDKOut(stdout), setup: setup, started: time.Now(),
		mode: permission.Mode(o.permissionMode), modelRef: setup.modelRef, pending: map[string]chan sdkAnswer{},
		queue: make(chan sdkUserMessage, 1024)}
	go s.read(ctx, stdin)
	lastError := false
	first := true
	for msg := range s.queue {
		if ctx.Err() != nil {
			break
		}
		lastError = s.runTurn(ctx, msg, first)
		first = false
	}
	if err := ctx.Err(); err != nil {
		return &exitErr{code: exitError, err: sema.Errorf(agent.CodeCancelled, "sema was stopped")}
	}
	if lastError {
		// As the reference does: the SDK then reports the last result's error.
		return &exitErr{code: exitError}
	}
	return nil
}

// read reads stdin line by line: user messages go to the queue, control requests are
// answered, answers to sema's own requests go to their waiters.
func (s *sdkSession) read(ctx context.Context, stdin io.Reader) {
	defer func() {
		s.mu.Lock()
		s.inputClosed = true
		for id, ch := range s.pending {
			close(ch)
			delete(s.pending, id)
		}
		s.mu.Unlock()
		close(s.queue)
	}()
	r := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := readLine(r, sdkMaxLine)
		if len(strings.TrimSpace(string(line))) > 0 {
			s.handleLine(ctx, line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErr = err
				fmt.Fprintf(s.stderr, "sema: stdin: %v\n", err)
			}
			return
		}
	}
}

// readLine reads one line without its newline; a line longer than max is an error.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, sema.Errorf(codeSDKMalformed, "a stdin line is longer than %d bytes", max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return []byte(strings.TrimRight(string(line), "\r\n")), err
	}
}

func (s *sdkSession) handleLine(ctx context.Context, line []byte) {
	var env struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
		Response  json.RawMessage `json:"response"`
		Message   json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		fmt.Fprintf(s.stderr, "sema: a stdin line is not a JSON object (%s); it was skipped\n", codeSDKMalformed)
		return
	}
	switch env.Type {
	case "user":
		s.queue <- userMessage(env.Message)
	case "control_request":
		var req struct {
			Subtype string `json:"subtype"`
		}
		json.Unmarshal(env.Request, &req)
		if req.Subtype == "initialize" {
			// Handled before the next line is read, so that the turn a following user
			// line starts sees what it configured.
			resp, err := s.initialize(env.Request)
			s.answer(env.RequestID, resp, err)
			return
		}
		go func() {
			resp, err := s.control(ctx, req.Subtype, env.Request)
			s.answer(env.RequestID, resp, err)
		}()
	case "control_response":
		s.routeAnswer(env.Response)
	case "control_cancel_request", "keep_alive":
		// sema sends nothing the SDK's cancellations concern; keep_alive needs nothing.
	default:
		fmt.Fprintf(s.stderr, "sema: a stdin line of type %q is not part of the protocol; it was skipped (%s)\n", env.Type, codeSDKMalformed)
	}
}

// userMessage reads a user line's message: its content as a string or as content
// blocks, of which sema takes the text (joined) and the images (in order, after it).
func userMessage(raw json.RawMessage) sdkUserMessage {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Content) == 0 {
		return sdkUserMessage{err: sema.Errorf(codeSDKMalformed, "a user line has no message.content")}
	}
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		return sdkUserMessage{text: text}
	}
	var blocks []struct {
		Type   string          `json:"type"`
		Text   string          `json:"text"`
		Source json.RawMessage `json:"source"`
	}
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return sdkUserMessage{err: sema.Errorf(codeSDKMalformed, "a user line's message.content is neither a string nor content blocks")}
	}
	var parts []string
	var images []agent.Image
	for i, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			img, err := sdkImage(i+1, b.Source)
			if err != nil {
				return sdkUserMessage{err: err}
			}
			images = append(images, img)
		default:
			return sdkUserMessage{err: sema.Errorf(codeSDKUnsupported, "a prompt's %s block is not supported yet; send text and images", b.Type)}
		}
	}
	return sdkUserMessage{text: strings.Join(parts, "\n\n"), images: images}
}

// sdkImage reads the source of content block i (counted from 1), an image block: the
// base64 data of a PNG, JPEG, GIF or WebP image whose bytes are of the media type it
// names. The runner checks the image again (and holds it to the model's limits); the
// protocol refuses what is not an image block's shape by name first.
func sdkImage(i int, raw json.RawMessage) (agent.Image, error) {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &src) != nil {
		return agent.Image{}, sema.Errorf(codeSDKMalformed, "the image in content block %d has no source object; send {\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":…}", i)
	}
	switch src.Type {
	case "base64":
	case "url":
		return agent.Image{}, sema.Errorf(codeSDKUnsupported, "the image in content block %d has a url source, which sema does not fetch; send the image's bytes as a base64 source", i)
	default:
		return agent.Image{}, sema.Errorf(codeSDKUnsupported, "the image in content block %d has a source of type %q; send a base64 source", i, src.Type)
	}
	switch src.MediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return agent.Image{}, sema.Errorf(codeSDKUnsupported, "the image in content block %d has media type %q; send image/png, image/jpeg, image/gif or image/webp", i, src.MediaType)
	}
	data, err := base64.StdEncoding.DecodeString(src.Data)
	if err != nil || len(data) == 0 {
		return agent.Image{}, sema.Errorf(codeSDKMalformed, "the image in content block %d has data that is not base64 of an image (standard alphabet, padded); encode the image's bytes", i)
	}
	switch got := imagefit.Sniff(data); got {
	case src.MediaType:
	case "":
		return agent.Image{}, sema.Errorf(codeSDKMalformed, "the image in content block %d decodes to %d bytes that are not a PNG, JPEG, GIF or WebP image; send the base64 of the image file's bytes", i, len(data))
	default:
		return agent.Image{}, sema.Errorf(codeSDKMalformed, "the image in content block %d is said to be %s but its bytes are %s; give its real media type", i, src.MediaType, got)
	}
	return agent.Image{MediaType: src.MediaType, Data: data}, nil
}

// answer writes the control response to request id.
func (s *sdkSession) answer(id string, response any, err error) {
	if err != nil {
		s.out.write(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": id, "error": err.Error()}})
		return
	}
	if response == nil {
		response = map[string]any{}
	}
	s.out.write(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": response}})
}

// routeAnswer hands the answer to one of sema's requests to its waiter; an answer
// nobody waits for (a late one, after a cancellation) is dropped.
func (s *sdkSession) routeAnswer(raw json.RawMessage) {
	var r struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return
	}
	s.mu.Lock()
	ch := s.pending[r.RequestID]
	delete(s.pending, r.RequestID)
	s.mu.Unlock()
	if ch != nil {
		ch <- sdkAnswer{ok: r.Subtype == "success", response: r.Response, err: r.Error}
	}
}

// ask sends one of sema's control requests and waits for its answer. It fails when
// stdin has ended (nobody can answer any more) or ctx ends first.
func (s *sdkSession) ask(ctx context.Context, request map[string]any) (json.RawMessage, error) {
	s.mu.Lock()
	if s.inputClosed {
		s.mu.Unlock()
		return nil, errors.New("the SDK's input has ended, so it cannot answer")
	}
	s.nextID++
	id := "sema-" + strconv.Itoa(s.nextID)
	ch := make(chan sdkAnswer, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	s.out.write(map[string]any{"type": "control_request", "request_id": id, "request": request})
	select {
	case a, ok := <-ch:
		if !ok {
			return nil, errors.New("the SDK's input ended before it answered")
		}
		if !a.ok {
			return nil, errors.New(cmp.Or(a.err, "the SDK answered with an error"))
		}
		return a.response, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		s.out.write(map[string]any{"type": "control_cancel_request", "request_id": id})
		return nil, context.Cause(ctx)
	}
}

// initialize applies an initialize request and answers what the SDK reads from it.
func (s *sdkSession) initialize(raw json.RawMessage) (any, error) {
	var req struct {
		Hooks map[string][]struct {
			Matcher         string   `json:"matcher"`
			HookCallbackIDs []string `json:"hookCallbackIds"`
			Timeout         float64  `json:"timeout"`
		} `json:"hooks"`
		SystemPrompt       []string                   `json:"systemPrompt"`
		AppendSystemPrompt string                     `json:"appendSystemPrompt"`
		MCPServers         map[string]json.RawMessage `json:"mcpServers"`
		SDKMCPServers      []string                   `json:"sdkMcpServers"`
		DisallowedTools    []string                   `json:"disallowedTools"`
		Agents             map[string]json.RawMessage `json:"agents"`
		JSONSchema         json.RawMessage            `json:"jsonSchema"`
		Settings           json.RawMessage            `json:"settings"`
		ManagedSettings    json.RawMessage            `json:"managedSettings"`
		Plugins            json.RawMessage            `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, sema.Errorf(codeSDKMalformed, "the initialize request does not parse: %v", err)
	}
	var unsupported []string
	for name, present := range map[string]bool{
		"sdkMcpServers (in-process MCP servers)":            len(req.SDKMCPServers) > 0,
		"agents (put agent files in .sema/agents/ instead)": len(req.Agents) > 0,
		"jsonSchema (structured output)":                    len(req.JSONSchema) > 0 && string(req.JSONSchema) != "null",
		"settings (use --settings)":                         len(req.Settings) > 0 && string(req.Settings) != "null",
		"managedSettings":                                   len(req.ManagedSettings) > 0 && string(req.ManagedSettings) != "null",
		"plugins":                                           len(req.Plugins) > 0 && string(req.Plugins) != "null" && string(req.Plugins) != "[]",
	} {
		if present {
			unsupported = append(unsupported, name)
		}
	}
	if len(unsupported) > 0 {
		slices.Sort(unsupported)
		return nil, sema.Errorf(codeSDKUnsupported, "sema does not support these initialize fields yet: %s", strings.Join(unsupported, "; "))
	}
	var in sdkInit
	var prompts []string
	for _, p := range req.SystemPrompt {
		if p != "" && p != "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__" {
			prompts = append(prompts, p)
		}
	}
	in.systemPrompt = strings.Join(prompts, "\n\n")
	in.appendPrompt = req.AppendSystemPrompt
	in.disallowed = req.DisallowedTools
	for event, matchers := range req.Hooks {
		ev := hooks.Event(event)
		for _, m := range matchers {
			for _, id := range m.HookCallbackIDs {
				in.hooks = append(in.hooks, hooks.Hook{Event: ev, Matcher: m.Matcher, Timeout: time.Duration(m.Timeout * float64(time.Second)),
					Func: s.hookCallback(id), Source: "the SDK's hooks (" + id + ")"})
			}
		}
	}
	if _, err := hooks.NewSet(in.hooks); err != nil {
		return nil, err
	}
	if len(req.MCPServers) > 0 {
		b, _ := json.Marshal(map[string]any{"mcpServers": req.MCPServers})
		if _, err := mcpConfigs([]string{string(b)}); err != nil {
			return nil, err
		}
		in.mcpJSON = string(b)
	}
	s.mu.Lock()
	s.init = in
	s.mu.Unlock()
	return map[string]any{
		"commands":                  s.setup.commandList(),
		"agents":                    s.setup.agentList(),
		"output_style":              "default",
		"available_output_styles":   []string{"default"},
		"models":                    []any{map[string]any{"value": s.modelRef, "displayName": s.modelRef, "description": "the model of this session"}},
		"account":                   map[string]any{},
		"pid":                       os.Getpid(),
		"mcp_servers_applied":       true,
		"hooks_applied":             true,
		"disallowed_tools_applied":  true,
		"hook_on_failure_supported": false,
		"claude_code_version":       "sema " + versionString,
	}, nil
}

// hookCallback is a Go hook that asks the SDK to run its hook callback id.
func (s *sdkSession) hookCallback(id string) hooks.Func {
	return func(ctx context.Context, in hooks.Input) (hooks.Output, error) {
		input, err := json.Marshal(in)
		if err != nil {
			return hooks.Output{}, err
		}
		resp, err := s.ask(ctx, map[string]any{"subtype": "hook_callback", "callback_id": id, "input": json.RawMessage(input), "tool_use_id": in.ToolUseID})
		if err != nil {
			return hooks.Output{}, err
		}
		var out hooks.Output
		if len(resp) > 0 {
			if err := json.Unmarshal(resp, &out); err != nil {
				return hooks.Output{}, fmt.Errorf("the hook callback's answer is not a hook output: %v", err)
			}
		}
		return out, nil
	}
}

// control answers a control request other than initialize.
func (s *sdkSession) control(ctx context.Context, subtype string, raw json.RawMessage) (any, error) {
	switch subtype {
	case "interrupt":
		s.mu.Lock()
		t := s.turn
		s.mu.Unlock()
		if t != nil {
			t.cancel(errInterrupted)
		}
		return map[string]any{"still_queued": []any{}}, nil
	case "set_permission_mode":
		var req struct {
			Mode string `json:"mode"`
		}
		json.Unmarshal(raw, &req)
		return s.setMode(ctx, req.Mode)
	case "set_model":
		var req struct {
			Model *string `json:"model"`
		}
		json.Unmarshal(raw, &req)
		ref := s.setup.modelRef
		if req.Model != nil && *req.Model != "" {
			ref = *req.Model
		}
		if _, _, err := s.setup.openModel(ref); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.modelRef = ref
		s.mu.Unlock()
		return map[string]any{}, nil
	case "set_max_thinking_tokens":
		fmt.Fprintf(s.stderr, "sema: set_max_thinking_tokens has no effect: sema does not budget thinking tokens\n")
		return map[string]any{}, nil
	case "mcp_status":
		s.mu.Lock()
		servers := s.lastServers
		s.mu.Unlock()
		if servers == nil {
			servers = []any{}
		}
		return map[string]any{"mcpServers": servers}, nil
	}
	return nil, sema.Errorf(codeSDKUnsupported, "Unsupported control request subtype: %s", subtype)
}

// setMode changes the permission mode: of the running turn through its Control, and of
// the turns that follow.
func (s *sdkSession) setMode(ctx context.Context, word string) (any, error) {
	mode, err := permission.ParseMode(word)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.mode = mode
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return map[string]any{"mode": string(mode)}, nil
	}
	// The turn may not have prepared its leg yet: wait for it, briefly.
	deadline := time.Now().Add(10 * time.Second)
	for {
		receipt, err := t.control.SetPermissionMode(ctx, mode)
		if err == nil {
			return map[string]any{"mode": string(receipt.Effective), "receipt": receipt}, nil
		}
		if !sema.IsCode(err, agent.CodeNotRunning) || time.Now().After(deadline) {
			return nil, err
		}
		s.mu.Lock()
		still := s.turn == t
		s.mu.Unlock()
		if !still {
			return map[string]any{"mode": string(mode)}, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runTurn runs one user message as a leg of the session and writes its messages. It
// reports whether the turn's result was an error.
func (s *sdkSession) runTurn(ctx context.Context, msg sdkUserMessage, first bool) bool {
	enc := &sdkEncoder{partial: s.o.sdk.includePartial, sessionID: s.currentSession(), started: time.Now()}
	if msg.err != nil {
		s.out.write(enc.failure(msg.err))
		return true
	}
	s.mu.Lock()
	init, mode, ref := s.init, s.mode, s.modelRef
	allowed := append([]string(nil), s.allowed...)
	s.mode = ""
	s.mu.Unlock()
	deps, spec, err := s.setup.turn(ref)
	if err != nil {
		s.out.write(enc.failure(err))
		return true
	}
	spec.Prompt = msg.text
	spec.Images = msg.images
	spec.PermissionMode = mode
	if init.systemPrompt != "" && spec.SystemPrompt == "" {
		spec.SystemPrompt = init.systemPrompt
	}
	if init.appendPrompt != "" {
		spec.AppendSystemPrompt = strings.TrimSpace(spec.AppendSystemPrompt + "\n\n" + init.appendPrompt)
	}
	spec.AllowedTools = append(spec.AllowedTools, allowed...)
	spec.DisallowedTools = append(spec.DisallowedTools, init.disallowed...)
	if init.mcpJSON != "" {
		servers, _ := mcpConfigs([]string{init.mcpJSON})
		spec.MCPServers = append(spec.MCPServers, servers...)
	}
	if len(init.hooks) > 0 {
		h := agent.Hooks{}
		if deps.Hooks != nil {
			h = *deps.Hooks
		}
		h.Events = append(append([]hooks.Hook(nil), h.Events...), init.hooks...)
		deps.Hooks = &h
	}
	if s.o.sdk.permissionPromptTool == "stdio" {
		deps.Approver = sdkApprover{s}
		spec.OnAsk = agent.OnAskApprover
	}
	if id := s.currentSession(); id != "" {
		spec.Resume = &agent.Resume{SessionID: id}
		if mode == "" {
			spec.PermissionMode = "" // the session keeps the mode it recorded
		}
	} else if !first {
		spec.Resume = nil
	}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := &sdkTurn{cancel: cancel, control: &agent.Control{}}
	spec.Control = t.control
	s.mu.Lock()
	s.turn = t
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
	}()
	var res *agent.TaskResult
	for ev, err := range agent.New(deps).Events(tctx, spec) {
		if err != nil {
			s.out.write(enc.failure(err))
			return true
		}
		if ev.Type == agent.EventInit {
			enc.sessionID = ev.Manifest.SessionID
			s.mu.Lock()
			s.sessionID = ev.Manifest.SessionID
			s.lastServers = sdkServers(ev.Manifest)
			s.mu.Unlock()
		}
		for _, line := range enc.event(ev, s.setup) {
			s.out.write(line)
		}
		if ev.Type == agent.EventResult {
			res = ev.Result
		}
	}
	return res == nil || res.Status != sema.StatusCompleted
}

func (s *sdkSession) currentSession() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// sdkApprover puts the leg's permission questions to the SDK's canUseTool callback as
// can_use_tool control requests. An allow may carry an edited input (the fold judges it
// again, as every edit); a deny carries the message the model reads, and interrupt
// stops the turn.
type sdkApprover struct{ s *sdkSession }

func (a sdkApprover) Approve(ctx context.Context, req permission.ApprovalRequest) (permission.ApprovalDecision, error) {
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	request := map[string]any{"subtype": "can_use_tool", "tool_name": req.Tool, "input": input, "tool_use_id": req.ToolUseID,
		"description": req.Ask.Reason, "decision_reason": req.Ask.Reason, "permission_suggestions": permissionSuggestions(req, a.s.setup.root)}
	if req.Agent != "" {
		request["agent_id"] = req.Agent
	}
	resp, err := a.s.ask(ctx, request)
	if err != nil {
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "The SDK's permission callback failed: " + err.Error()}, nil
	}
	var ans struct {
		Behavior           string          `json:"behavior"`
		UpdatedInput       json.RawMessage `json:"updatedInput"`
		Message            string          `json:"message"`
		Interrupt          bool            `json:"interrupt"`
		UpdatedPermissions []struct {
			Type        string `json:"type"`
			Behavior    string `json:"behavior"`
			Destination string `json:"destination"`
			Rules       []struct {
				ToolName    string `json:"toolName"`
				RuleContent string `json:"ruleContent"`
			} `json:"rules"`
		} `json:"updatedPermissions"`
	}
	if err := json.Unmarshal(resp, &ans); err != nil {
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: "The SDK's permission answer does not parse, so the call was refused."}, nil
	}
	switch ans.Behavior {
	case "allow":
		d := permission.ApprovalDecision{Behavior: permission.Allow, Reason: "allowed by the SDK's canUseTool"}
		if len(ans.UpdatedInput) > 0 && string(ans.UpdatedInput) != "null" && !jsonSame(ans.UpdatedInput, input) {
			d.UpdatedInput = ans.UpdatedInput
		}
		for _, p := range ans.UpdatedPermissions {
			if p.Type != "addRules" || p.Behavior != "allow" {
				continue
			}
			for _, r := range p.Rules {
				rule := r.ToolName
				if r.RuleContent != "" {
					rule += "(" + r.RuleContent + ")"
				}
				if _, err := permission.ParseRule(rule); err != nil {
					// Kept, it would refuse every later turn (config.rule_invalid).
					fmt.Fprintf(a.s.stderr, "sema: the SDK's rule %s was not kept for the session: %s\n", rule, sema.MessageOf(err))
					continue
				}
				a.s.mu.Lock()
				a.s.allowed = append(a.s.allowed, rule)
				a.s.mu.Unlock()
			}
		}
		return d, nil
	default:
		// An interrupt is the engine's to apply: it records the refusal, then stops
		// the turn. Cancelling the turn here would race the refusal's own record.
		return permission.ApprovalDecision{Behavior: permission.Deny, Reason: cmp.Or(ans.Message, "The SDK's canUseTool denied the call."),
			Interrupt: ans.Interrupt}, nil
	}
}

// permissionSuggestions are the permission updates the SDK may offer its user: allow,
// for the session, this call and as little else as a rule can say
// (permission.NarrowRule). A call no rule names alone (a command with a glob or an
// operator, a path with a pattern character) gets no suggestion: the client's answer
// comes back as rules, which mean what their syntax says, and Bash(rm *) is every rm.
func permissionSuggestions(req permission.ApprovalRequest, root string) []any {
	narrow := permission.NarrowRule(req.Tool, req.Input, root)
	if narrow == "" {
		return []any{}
	}
	rule := map[string]any{"toolName": narrow}
	if name, content, ok := strings.Cut(narrow, "("); ok {
		rule = map[string]any{"toolName": name, "ruleContent": strings.TrimSuffix(content, ")")}
	}
	return []any{map[string]any{"type": "addRules", "rules": []any{rule}, "behavior": "allow", "destination": "session"}}
}

func jsonSame(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// sdkSetup is what every turn of an SDK session shares: the permissions, the state
// directory, the workspace's trust and the base of every turn's spec.
type sdkSetup struct {
	o        *runOptions
	modelRef string
	root     string // the task root, which a call's relative path is read against
	closer   io.Closer
	base     func(ref string) (agent.Deps, agent.TaskSpec, error)
	// commands are the custom commands, as initialize and system/init list them.
	commands []map[string]any
}

func (s *sdkSetup) close() {
	if s.closer != nil {
		s.closer.Close()
	}
}

func (s *sdkSetup) turn(ref string) (agent.Deps, agent.TaskSpec, error) { return s.base(ref) }

func (s *sdkSetup) openModel(ref string) (any, string, error) {
	p, name, err := openProvider(ref, s.o.baseURL)
	return p, name, err
}

func (s *sdkSetup) commandList() []map[string]any {
	if s.commands == nil {
		return []map[string]any{}
	}
	return s.commands
}

// agentList is empty: sema's agent types are not listed to the SDK yet.
func (s *sdkSetup) agentList() []map[string]any { return []map[string]any{} }

// prepareSDK does once what every turn shares, refusing a bad command line before any
// line is read.
func prepareSDK(ctx context.Context, o *runOptions, stderr io.Writer) (*sdkSetup, error) {
	if err := o.sdk.refuse(); err != nil {
		return nil, err
	}
	if err := o.claude.apply(o); err != nil {
		return nil, err
	}
	if err := checkSDKFlags(o); err != nil {
		return nil, err
	}
	// The SDK protocol owns stdin: the permission setup must not read it.
	saved := o.inputFormat
	o.inputFormat = "text"
	perms, err := resolvePermissions(o, "", nil, stderr)
	o.inputFormat = saved
	if err != nil {
		return nil, err
	}
	lease, err := sessionLease()
	if err != nil {
		return nil, usageErr(err)
	}
	run, err := prepareRun(o, perms, lease)
	if err != nil {
		return nil, err
	}
	root, home := run.root, run.home
	ref := run.modelRef("")
	if _, _, err := openProvider(ref, o.baseURL); err != nil {
		return nil, usageErr(err)
	}
	if err := run.load(); err != nil {
		return nil, err
	}
	setup := &sdkSetup{o: o, modelRef: ref, root: root}
	for _, c := range commands.Load(commands.Options{Root: root, Home: perms.home, ClaudeCompat: perms.compat}).Commands() {
		setup.commands = append(setup.commands, map[string]any{"name": c.Name, "description": c.Description, "argumentHint": c.ArgumentHint})
	}
	// One store for the whole session; without persistence, one in memory that dies
	// with the process.
	store, err := openSDKStores(ctx, home, o.sdk.noPersistence)
	if err != nil {
		return nil, err
	}
	setup.closer = store
	firstResume, err := firstSDKResume(ctx, o, store, root)
	if err != nil {
		store.Close()
		return nil, err
	}
	used := false
	// One provider per model for the whole session: a turn continues the conversation
	// with the same client (and the scripted model with the next turn of its script).
	type opened struct {
		p    model.Provider
		name string
	}
	providers := map[string]opened{}
	setup.base = func(modelRef string) (agent.Deps, agent.TaskSpec, error) {
		op, ok := providers[modelRef]
		if !ok {
			p, name, err := openProvider(modelRef, o.baseURL)
			if err != nil {
				return agent.Deps{}, agent.TaskSpec{}, err
			}
			op = opened{p, name}
			providers[modelRef] = op
		}
		deps, spec, err := run.task(op.p, op.name)
		if err != nil {
			return agent.Deps{}, agent.TaskSpec{}, err
		}
		spec.OnAsk = agent.OnAskDeny
		deps = store.deps(deps)
		if !used && firstResume != "" {
			spec.Resume = &agent.Resume{SessionID: firstResume, Fork: o.forkSession}
		}
		used = true
		return deps, spec, nil
	}
	return setup, nil
}

// firstSDKResume is the session the first turn continues: --resume's, or with
// --continue the newest of the root.
func firstSDKResume(ctx context.Context, o *runOptions, store *sdkStores, root string) (string, error) {
	if !o.continueLast {
		return o.resume, nil
	}
	canon, err := canonicalRoot(ctx, root)
	if err != nil {
		return "", usageErr(err)
	}
	s, err := store.newest(ctx, canon)
	if err != nil {
		return "", usageErr(sema.Errorf("session.not_found", "there is no session to continue in %s; start one without --continue", root))
	}
	return s.ID, nil
}

// checkSDKFlags refuses the flags that contradict each other or the SDK protocol.
func checkSDKFlags(o *runOptions) error {
	if o.resume != "" && o.continueLast {
		return usageErr(sema.Errorf(codeUsage, "--resume and --continue both name the session to continue; give one"))
	}
	if o.forkSession && o.resume == "" && !o.continueLast {
		return usageErr(sema.Errorf(codeUsage, "--fork-session needs --resume ID or --continue"))
	}
	switch o.sdk.permissionPromptTool {
	case "", "stdio":
	default:
		return usageErr(sema.Errorf(codeSDKUnsupported, "--permission-prompt-tool %q: only stdio (the SDK's canUseTool) is supported", o.sdk.permissionPromptTool))
	}
	if o.onAsk != "" && o.onAsk != "deny" {
		return usageErr(sema.Errorf(codeStdinConflict, "in the SDK protocol stdin carries protocol lines; questions go to the SDK's canUseTool (--permission-prompt-tool stdio) or are denied, not --on-ask %s", o.onAsk))
	}
	return nil
}

// sdkStores are the stores of an SDK session: the state directory's, or, with
// --no-session-persistence, stores in memory that end with the process.
type sdkStores struct {
	deps   func(agent.Deps) agent.Deps
	newest func(ctx context.Context, root string) (session.Session, error)
	close  func() error
}

func (s *sdkStores) Close() error { return s.close() }

func openSDKStores(ctx context.Context, home string, memory bool) (*sdkStores, error) {
	if memory {
		sessions, hist := session.NewMemory(), history.NewMemory()
		return &sdkStores{
			deps: func(d agent.Deps) agent.Deps {
				d.Store, d.History, d.StateDir = sessions, hist, home
				return d
			},
			newest: sessions.Newest,
			close:  func() error { return errors.Join(hist.Close(), sessions.Close()) },
		}, nil
	}
	st, err := openState(ctx, home)
	if err != nil {
		return nil, &exitErr{code: exitError, err: err}
	}
	return &sdkStores{deps: func(d agent.Deps) agent.Deps { return d.WithStateDir(st) }, newest: st.Sessions().Newest, close: st.Close}, nil
}
