package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
)

// acpSession is one open session of the connection: its backend, the running prompt,
// and the permission answers the client gave "always" to.
type acpSession struct {
	id     string
	a      *Agent
	opened *Session
	// bufs are the session's reads and writes through the client; nil when it
	// serves no files.
	bufs *buffers

	mu      sync.Mutex
	running context.CancelFunc // the running prompt's; nil between prompts
	// queued are the prompts read and not yet running, by request id: true once a
	// session/cancel came for them.
	queued  map[string]bool
	prompts int
	mode    permission.Mode
	// startMode is the mode the session opened in, listed among the modes even when
	// the picker would not offer it.
	startMode permission.Mode
	allowed   map[string]bool // rules allowed always in this session
	rejected  map[string]bool // rules rejected always in this session
	tools     map[string]*toolState
	streamed  bool // the current response's text came as deltas
	questions int  // questions asked about no call of the model's
	asking    int  // questions open at the client now
	deferred  bool // a question was open when the client went away (Approve deferred it)
}

// update sends one session/update.
func (s *acpSession) update(u SessionUpdate) {
	_ = s.a.conn.Notify(MethodSessionUpdate, SessionNotification{SessionID: s.id, Update: u})
}

func (s *acpSession) close() {
	s.cancel()
	if s.opened != nil && s.opened.Close != nil {
		if err := s.opened.Close(); err != nil {
			fmt.Fprintf(s.a.opts.Log, "sema acp: closing session %s: %v\n", s.id, err)
		}
	}
}

// cancel interrupts the running prompt, if any, and the prompts read but not yet
// started.
func (s *acpSession) cancel() {
	s.mu.Lock()
	f := s.running
	for id := range s.queued {
		s.queued[id] = true
	}
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// unqueue forgets a prompt request once it is answered.
func (s *acpSession) unqueue(id string) {
	s.mu.Lock()
	delete(s.queued, id)
	s.mu.Unlock()
}

// modeNames are the modes a client may pick, in the order it lists them.
var modeNames = []SessionMode{
	{ID: string(permission.ModeDefault), Name: "Default", Description: "Ask before edits, commands and fetches the rules do not allow"},
	{ID: string(permission.ModeAcceptEdits), Name: "Accept edits", Description: "Edit files in the workspace without asking; ask before commands"},
	{ID: string(permission.ModePlan), Name: "Plan", Description: "Read and plan only; ask before leaving plan"},
	{ID: string(permission.ModeBypassPermissions), Name: "Bypass permissions", Description: "Run every call without asking (deny rules still hold)"},
}

func (s *acpSession) available() []SessionMode {
	s.mu.Lock()
	cur := s.startMode
	s.mu.Unlock()
	out := make([]SessionMode, 0, len(modeNames)+1)
	listed := false
	for _, m := range modeNames {
		if m.ID == string(permission.ModeBypassPermissions) && !s.a.opts.Bypass {
			continue
		}
		listed = listed || m.ID == string(cur)
		out = append(out, m)
	}
	if !listed && cur != "" {
		// The session was started in a mode the picker does not offer (auto, dontAsk):
		// it is listed too, so the client can show it and go back to it.
		out = append(out, SessionMode{ID: string(cur), Name: string(cur), Description: "The mode sema acp was started in"})
	}
	return out
}

func (s *acpSession) offers(mode string) bool {
	for _, m := range s.available() {
		if m.ID == mode {
			return true
		}
	}
	return false
}

func (s *acpSession) modes() *SessionModeState {
	s.mu.Lock()
	cur := s.mode
	s.mu.Unlock()
	return &SessionModeState{CurrentModeID: string(cur), AvailableModes: s.available()}
}

// announceCommands tells the client which custom commands a prompt may invoke.
func (s *acpSession) announceCommands() {
	cmds := []AvailableCommand{}
	for _, c := range s.opened.Commands {
		ac := AvailableCommand{Name: c.Name, Description: c.Description}
		if ac.Description == "" {
			ac.Description = "custom command (" + c.Path + ")"
		}
		if c.ArgumentHint != "" {
			ac.Input = &CommandInput{Hint: c.ArgumentHint}
		}
		cmds = append(cmds, ac)
	}
	s.update(SessionUpdate{SessionUpdate: UpdateAvailableCommands, AvailableCommands: &cmds})
}

func (s *acpSession) setMode(ctx context.Context, id string) (any, error) {
	if !s.offers(id) {
		ids := []string{}
		for _, m := range s.available() {
			ids = append(ids, m.ID)
		}
		return nil, errorf(CodeInvalidParams, "the mode %q is not offered; pick one of %s", id, strings.Join(ids, ", "))
	}
	eff, err := s.opened.Backend.SetMode(ctx, permission.Mode(id))
	if err != nil {
		return nil, errorf(CodeInvalidParams, "%v", err)
	}
	if eff == "" {
		eff = permission.Mode(id)
	}
	s.setCurrentMode(eff)
	return struct{}{}, nil
}

// setCurrentMode records the mode in force and tells the client when it changed to one
// it lists.
func (s *acpSession) setCurrentMode(m permission.Mode) {
	s.mu.Lock()
	changed := s.mode != m
	s.mode = m
	s.mu.Unlock()
	if changed && s.offers(string(m)) {
		s.update(SessionUpdate{SessionUpdate: UpdateCurrentMode, CurrentModeID: string(m)})
	}
}

// prompt runs one leg for the client's blocks and answers with why it stopped.
func (s *acpSession) prompt(ctx context.Context, id string, blocks []ContentBlock) (any, error) {
	text, images, err := promptContent(blocks)
	if err != nil {
		return nil, err
	}
	run := s.opened.Backend.Prompt
	if len(images) > 0 {
		ib, ok := s.opened.Backend.(ImageBackend)
		if !ok {
			return nil, errorf(CodeInvalidParams, "this session's back-end takes no images; send the prompt without them")
		}
		run = func(ctx context.Context, prompt string, emit func(agent.Event)) error {
			return ib.PromptWith(ctx, prompt, images, emit)
		}
	}
	// The leg outlives the connection only while a question is open: an editor that
	// goes away then leaves the question parked (Approve defers it), and the leg ends
	// at once, awaiting the answer. Otherwise the editor's going ends the leg.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			open := s.asking > 0 || s.deferred
			s.mu.Unlock()
			if !open {
				cancel()
			}
		case <-lctx.Done():
		}
	}()
	s.mu.Lock()
	if s.queued[id] {
		// Cancelled before it started: nothing ran.
		s.mu.Unlock()
		return PromptResponse{StopReason: StopCancelled}, nil
	}
	if s.running != nil {
		s.mu.Unlock()
		return nil, errorf(CodeInvalidRequest, "session %s is answering a prompt already; wait for its answer or send session/cancel", s.id)
	}
	s.running = cancel
	s.prompts++
	first := s.prompts == 1
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = nil
		s.mu.Unlock()
	}()
	if first && s.opened.Demo != "" {
		s.update(SessionUpdate{SessionUpdate: UpdateAgentMessage, Content: ptr(TextBlock(s.opened.Demo + "\n\n"))})
	}
	var res *agent.TaskResult
	var last *model.Response
	err = run(lctx, text, func(ev agent.Event) {
		switch {
		case ev.Type == agent.EventResult:
			res = ev.Result
		case ev.Type == agent.EventAssistant && ev.ParentToolUseID == "":
			last = ev.Response
		}
		s.event(ev)
	})
	if err != nil {
		if lctx.Err() != nil && ctx.Err() == nil {
			return PromptResponse{StopReason: StopCancelled}, nil
		}
		return nil, legError(err)
	}
	s.settle()
	if first {
		s.entitle(ctx, text)
	}
	if res == nil {
		return nil, errorf(CodeInternalError, "the leg ended without a result")
	}
	if cp, ok := res.Parked(); ok && ctx.Err() != nil {
		fmt.Fprintf(s.a.opts.Log, "sema acp: the editor went away while session %s asked about %s; the question is parked: sema approve %s --checkpoint %s --allow (or --deny)\n", s.id, cp.Tool, s.id, cp.ID)
	}
	if cp, ok := res.Parked(); ok {
		// Under --on-ask park the question is not the editor's: say where it waits.
		s.update(SessionUpdate{SessionUpdate: UpdateAgentMessage, Content: ptr(TextBlock(fmt.Sprintf(
			"\n\nThe %s call waits for a person's answer (parked: %s). Answer it with `sema approve %s --checkpoint %s --allow` (or --deny), or with /questions in the terminal session.",
			cp.Tool, cp.Message, s.id, cp.ID)))})
	}
	return stopReason(res, last, lctx.Err() != nil)
}

// settle reports the calls the leg announced and never answered (it was cancelled,
// or parked before them) as failed, so that the client shows none of them running.
func (s *acpSession) settle() {
	s.mu.Lock()
	var open []string
	for id := range s.tools {
		open = append(open, id)
	}
	s.tools = map[string]*toolState{}
	s.mu.Unlock()
	slices.Sort(open)
	for _, id := range open {
		s.update(SessionUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: id, Status: StatusFailed,
			Content: []ToolCallContent{textContent("Not run: the prompt ended before it.")}})
	}
}

// entitle gives a session created by session/new the title a first leg gives a session
// it creates: the first line of its first prompt. A title there already is kept.
func (s *acpSession) entitle(ctx context.Context, prompt string) {
	if s.opened.Store == nil {
		return
	}
	line, _, _ := strings.Cut(prompt, "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:77]) + "..."
	}
	_, err := s.opened.Store.Update(context.WithoutCancel(ctx), s.id, func(st *session.Session) error {
		if st.Title == "" {
			st.Title = line
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(s.a.opts.Log, "sema acp: session %s keeps no title: %v\n", s.id, err)
	}
}

// stopReason maps how the leg ended to the prompt's stop reason.
func stopReason(res *agent.TaskResult, last *model.Response, cancelled bool) (any, error) {
	switch res.Status {
	case sema.StatusCancelled:
		return PromptResponse{StopReason: StopCancelled}, nil
	case sema.StatusMaxTurns:
		return PromptResponse{StopReason: StopMaxTurnRequests}, nil
	case sema.StatusBudgetExceeded:
		return PromptResponse{StopReason: StopMaxTokens}, nil
	case sema.StatusError:
		if cancelled {
			return PromptResponse{StopReason: StopCancelled}, nil
		}
		if res.Error != nil {
			return nil, legError(res.Error)
		}
		return nil, errorf(CodeInternalError, "the leg ended with an error")
	}
	if last != nil {
		switch last.StopReason {
		case model.StopMaxTokens:
			return PromptResponse{StopReason: StopMaxTokens}, nil
		case model.StopRefusal:
			return PromptResponse{StopReason: StopRefusal}, nil
		}
	}
	return PromptResponse{StopReason: StopEndTurn}, nil
}

// legError is a leg's failure as the client reads it: the sentence, and sema's code in
// data.
func legError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Code: CodeInternalError, Message: err.Error()}
	var se *sema.Error
	if errors.As(err, &se) {
		out.Data = map[string]string{"code": se.Code}
		if strings.HasPrefix(se.Code, "config.") {
			out.Code = CodeInvalidParams
		}
	}
	return out
}

// promptContent is the prompt the leg runs: the text blocks in order, and each resource
// as context around them — a link by its URI (the model reads it with its tools), an
// embedded text resource with its contents — and the images, sent after the text.
func promptContent(blocks []ContentBlock) (string, []agent.Image, error) {
	var images []agent.Image
	var text []ContentBlock
	for i, c := range blocks {
		if c.Type != "image" {
			text = append(text, c)
			continue
		}
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil || len(data) == 0 {
			return "", nil, errorf(CodeInvalidParams, "prompt block %d is an image whose data is not base64 image bytes", i)
		}
		images = append(images, agent.Image{MediaType: c.MIMEType, Data: data})
	}
	prompt, err := promptText(text, len(images) > 0)
	return prompt, images, err
}

// promptText is the text of the prompt's blocks other than images; it may be empty only
// when images go with it.
func promptText(blocks []ContentBlock, withImages bool) (string, error) {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
	}
	for i, c := range blocks {
		switch c.Type {
		case "text":
			sep()
			b.WriteString(c.Text)
		case "resource_link":
			if c.URI == "" {
				return "", errorf(CodeInvalidParams, "prompt block %d is a resource_link without a uri", i)
			}
			sep()
			if path, ok := filePath(c.URI); ok {
				fmt.Fprintf(&b, "Referenced file: %s", path)
			} else {
				fmt.Fprintf(&b, "Referenced: %s <%s>", orWord(c.Name, c.URI), c.URI)
			}
		case "resource":
			r := c.Resource
			switch {
			case r == nil:
				return "", errorf(CodeInvalidParams, "prompt block %d is a resource without its contents", i)
			case r.Text == nil:
				return "", errorf(CodeInvalidParams, "prompt block %d embeds a binary resource (%s); sema takes text resources only: link it instead", i, r.URI)
			}
			sep()
			ref := r.URI
			if path, ok := filePath(r.URI); ok {
				ref = path
			}
			fmt.Fprintf(&b, "<context ref=%q>\n%s\n</context>", ref, *r.Text)
		case "audio":
			return "", errorf(CodeInvalidParams, "prompt block %d is audio; sema takes text, images, resource links and embedded text resources (promptCapabilities)", i)
		default:
			return "", errorf(CodeInvalidParams, "prompt block %d has the type %q, which sema does not know", i, c.Type)
		}
	}
	if strings.TrimSpace(b.String()) == "" && !withImages {
		return "", errorf(CodeInvalidParams, "the prompt is empty; send at least one text block")
	}
	return b.String(), nil
}

// filePath is the path of a file:// URI, which the model's tools read by path.
func filePath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	return u.Path, true
}

func orWord(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func ptr[T any](v T) *T { return &v }
