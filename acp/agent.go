package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/commands"
	"github.com/sema-agent/sema/mcp"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/session"
	"github.com/sema-agent/sema/tools/files"
)

// Backend runs a session's prompts: each prompt is one leg continuing the session
// (the terminal session's tui.Local is one), and the permission mode changes for the
// running leg and every later one.
type Backend interface {
	// Prompt runs one leg for prompt and calls emit with each of its events, the result
	// last. Cancelling ctx interrupts the leg (it still ends with its result). An error
	// means the leg was refused before it started.
	Prompt(ctx context.Context, prompt string, emit func(agent.Event)) error
	// SetMode changes the mode of the running leg, if any, and of every later one, and
	// returns the mode in force.
	SetMode(ctx context.Context, mode permission.Mode) (permission.Mode, error)
}

// ImageBackend is what a Backend offers, beyond Backend, to take a prompt's images
// (the editor's image blocks): tui.Local is one. A session whose back-end does not
// refuses a prompt with an image by name.
type ImageBackend interface {
	// PromptWith is Prompt with images: the runner checks each as TaskSpec.Images are
	// checked, and refuses the leg before it starts when one is not an image it takes.
	PromptWith(ctx context.Context, prompt string, images []agent.Image, emit func(agent.Event)) error
}

// SessionSetup is what a session is opened with.
type SessionSetup struct {
	// Cwd is the client's working directory: the task root.
	Cwd string
	// MCPServers are the client's servers, to be mounted as --mcp-config servers are.
	MCPServers []mcp.Server
	// ID is the session's id: minted here for session/new (the first leg creates the
	// session under it), the stored session's for session/load.
	ID string
	// Load says the session is stored already: every leg continues it.
	Load bool
	// Approver answers the session's permission questions through the client.
	Approver permission.Approver
	// Buffers are the session's file reads and writes through the client, when it
	// offered both fs.readTextFile and fs.writeTextFile; nil otherwise (agent.Deps.Buffers).
	Buffers files.Buffers
}

// Session is an opened session, as the command line prepared it.
type Session struct {
	// Backend runs the prompts.
	Backend Backend
	// Root is the task root, canonical (the stored session's root must be the same).
	Root string
	// Mode is the mode the first leg requests ("" for default).
	Mode permission.Mode
	// Commands are the custom commands a prompt may invoke (/name args).
	Commands []*commands.Command
	// Store holds the transcripts session/load replays; nil without one.
	Store session.Store
	// Demo, when set, is said to the client at the session's first prompt: no model is
	// configured and a scripted demo answers.
	Demo string
	// Close releases what the session holds; nil for nothing.
	Close func() error
}

// Options configure the agent.
type Options struct {
	// Version is sema's version, in agentInfo.
	Version string
	// Open prepares a session. An error refuses session/new or session/load with its
	// sentence.
	Open func(ctx context.Context, s SessionSetup) (*Session, error)
	// Rule is what "allow always" (and "reject always") covers for a question: the
	// rule the terminal's dialog would add. Nil: the tool's name.
	Rule func(permission.ApprovalRequest) string
	// Bypass offers bypassPermissions among the modes (sema was started with it).
	Bypass bool
	// NewID mints the id of a new session (a lowercase UUID).
	NewID func() string
	// Log takes everything that is not protocol: stderr.
	Log io.Writer
}

// Agent is the agent side of one ACP connection.
type Agent struct {
	opts Options
	conn *Conn

	mu          sync.Mutex
	initialized bool
	client      ClientCapabilities
	sessions    map[string]*acpSession
}

// Serve speaks ACP on r and w until r ends or ctx does; every session's running leg
// is cancelled and waited for before it returns.
func Serve(ctx context.Context, opts Options, r io.Reader, w io.Writer) error {
	a := New(opts, w)
	err := a.conn.Serve(ctx, r)
	a.closeAll()
	return err
}

// New returns the agent of a connection writing to w; Conn().Serve reads.
func New(opts Options, w io.Writer) *Agent {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Rule == nil {
		opts.Rule = func(r permission.ApprovalRequest) string { return r.Tool }
	}
	a := &Agent{opts: opts, sessions: map[string]*acpSession{}}
	a.conn = NewConn(w, a, opts.Log)
	// The requests that make state a later request reads are answered in order.
	a.conn.Inline(MethodInitialize, MethodSessionNew, MethodSessionLoad)
	return a
}

// Conn is the agent's connection.
func (a *Agent) Conn() *Conn { return a.conn }

// ClientCapabilities are what the client said it offers at initialize.
func (a *Agent) ClientCapabilities() ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}

func (a *Agent) closeAll() {
	a.mu.Lock()
	ss := make([]*acpSession, 0, len(a.sessions))
	for _, s := range a.sessions {
		ss = append(ss, s)
	}
	a.sessions = map[string]*acpSession{}
	a.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
}

// decode reads params into v, refusing what does not fit with -32602.
func decode(method string, params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return errorf(CodeInvalidParams, "%s needs params", method)
	}
	if err := json.Unmarshal(params, v); err != nil {
		return errorf(CodeInvalidParams, "the params of %s do not read: %v", method, err)
	}
	return nil
}

// Handle implements Handler.
func (a *Agent) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodInitialize:
		return a.initialize(params)
	case MethodAuthenticate:
		return nil, errorf(CodeInvalidRequest, "sema offers no authentication methods: the model provider's key is read from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY)")
	case MethodSessionNew, MethodSessionLoad, MethodSessionPrompt, MethodSessionSetMode:
	default:
		return nil, errorf(CodeMethodNotFound, "sema does not offer the method %q", method)
	}
	a.mu.Lock()
	ok := a.initialized
	a.mu.Unlock()
	if !ok {
		return nil, errorf(CodeInvalidRequest, "send initialize before %s", method)
	}
	switch method {
	case MethodSessionNew:
		return a.newSession(ctx, params)
	case MethodSessionLoad:
		return a.loadSession(ctx, params)
	case MethodSessionPrompt:
		var p PromptRequest
		if err := decode(method, params, &p); err != nil {
			return nil, err
		}
		id := RequestID(ctx)
		s, err := a.session(p.SessionID)
		if err == nil {
			defer s.unqueue(id)
		}
		switch {
		case p.Prompt == nil:
			return nil, errorf(CodeInvalidParams, "session/prompt needs a prompt (a list of content blocks)")
		case err != nil:
			return nil, err
		}
		return s.prompt(ctx, id, p.Prompt)
	default: // MethodSessionSetMode
		var p SetModeRequest
		if err := decode(method, params, &p); err != nil {
			return nil, err
		}
		s, err := a.session(p.SessionID)
		if err != nil {
			return nil, err
		}
		return s.setMode(ctx, p.ModeID)
	}
}

// Started notes a prompt the connection is about to answer, so that a session/cancel
// read before its handler runs still cancels it.
func (a *Agent) Started(method, id string, params json.RawMessage) {
	if method != MethodSessionPrompt {
		return
	}
	var p PromptRequest
	if json.Unmarshal(params, &p) != nil {
		return
	}
	a.mu.Lock()
	s := a.sessions[p.SessionID]
	a.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.queued[id] = false
		s.mu.Unlock()
	}
}

// Notify implements Handler.
func (a *Agent) Notify(method string, params json.RawMessage) {
	switch method {
	case MethodSessionCancel:
		var p SessionIDParams
		if json.Unmarshal(params, &p) != nil {
			fmt.Fprintln(a.opts.Log, "sema acp: a session/cancel whose params do not read was ignored")
			return
		}
		s, err := a.session(p.SessionID)
		if err != nil {
			fmt.Fprintf(a.opts.Log, "sema acp: session/cancel: %v\n", err)
			return
		}
		s.cancel()
	default:
		fmt.Fprintf(a.opts.Log, "sema acp: the notification %q is not one sema takes; ignored\n", method)
	}
}

func (a *Agent) initialize(params json.RawMessage) (any, error) {
	var p InitializeRequest
	if err := decode(MethodInitialize, params, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, errorf(CodeInvalidParams, "initialize needs the client's protocolVersion")
	}
	a.mu.Lock()
	a.initialized, a.client = true, p.ClientCapabilities
	a.mu.Unlock()
	who := "a client"
	if p.ClientInfo != nil {
		who = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	c := p.ClientCapabilities
	// A client that serves both fs/read_text_file and fs/write_text_file gets the text
	// files the model reads and edits through it (sessionBuffers), so unsaved buffers
	// are what the model sees; the fence, the permission fold and file history decide
	// as without it. Its terminals are not used: a command run there would run outside
	// sema's sandbox, file history and permission fold, so commands stay in sema's
	// shell and their output goes to the client as tool_call_update content.
	fmt.Fprintf(a.opts.Log, "sema acp: %s connected (protocol %d; it offers fs.readTextFile %t, fs.writeTextFile %t, terminal %t)\n",
		who, *p.ProtocolVersion, c.FS.ReadTextFile, c.FS.WriteTextFile, c.Terminal)
	return InitializeResponse{
		// The protocol has one version: a client asking for another gets 1, and
		// decides whether it can speak it.
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: PromptCapabilities{EmbeddedContext: true, Image: true},
			MCPCapabilities:    MCPCapabilities{HTTP: true, SSE: true},
		},
		AgentInfo:   Implementation{Name: "sema", Title: "sema", Version: a.opts.Version},
		AuthMethods: []AuthMethod{},
	}, nil
}

// session finds an open session.
func (a *Agent) session(id string) (*acpSession, error) {
	a.mu.Lock()
	s := a.sessions[id]
	a.mu.Unlock()
	if s == nil {
		if id == "" {
			return nil, errorf(CodeInvalidParams, "the sessionId is missing; give the id session/new or session/load answered with")
		}
		return nil, &Error{Code: CodeResourceNotFound, Message: fmt.Sprintf("no open session %q on this connection; open it with session/new or session/load first", id),
			Data: map[string]string{"sessionId": id}}
	}
	return s, nil
}

func (a *Agent) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p NewSessionRequest
	if err := decode(MethodSessionNew, params, &p); err != nil {
		return nil, err
	}
	if p.Cwd == nil || !filepath.IsAbs(*p.Cwd) {
		return nil, errorf(CodeInvalidParams, "session/new needs cwd: the absolute directory the session works in")
	}
	id := a.opts.NewID()
	s, err := a.open(ctx, SessionSetup{Cwd: *p.Cwd, ID: id}, p.MCPServers)
	if err != nil {
		return nil, err
	}
	return answerThen{NewSessionResponse{SessionID: id, Modes: s.modes()}, s.announceCommands}, nil
}

func (a *Agent) loadSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p LoadSessionRequest
	if err := decode(MethodSessionLoad, params, &p); err != nil {
		return nil, err
	}
	if p.Cwd == nil || !filepath.IsAbs(*p.Cwd) {
		return nil, errorf(CodeInvalidParams, "session/load needs cwd: the absolute directory the session works in")
	}
	if p.SessionID == "" {
		return nil, errorf(CodeInvalidParams, "session/load needs the sessionId to load")
	}
	a.mu.Lock()
	s := a.sessions[p.SessionID]
	a.mu.Unlock()
	if s == nil {
		var err error
		if s, err = a.open(ctx, SessionSetup{Cwd: *p.Cwd, ID: p.SessionID, Load: true}, p.MCPServers); err != nil {
			return nil, err
		}
	}
	if err := s.replay(ctx); err != nil {
		return nil, err
	}
	return answerThen{LoadSessionResponse{Modes: s.modes()}, s.announceCommands}, nil
}

// open prepares a session through Options.Open and keeps it under its id.
func (a *Agent) open(ctx context.Context, setup SessionSetup, servers []MCPServer) (*acpSession, error) {
	mounted, err := MCPServers(servers)
	if err != nil {
		return nil, errorf(CodeInvalidParams, "%v", err)
	}
	setup.MCPServers = mounted
	s := &acpSession{id: setup.ID, a: a, tools: map[string]*toolState{}, allowed: map[string]bool{}, rejected: map[string]bool{}, queued: map[string]bool{}}
	setup.Approver = s
	if b := sessionBuffers(a.ClientCapabilities(), a.conn, setup.ID); b != nil {
		s.bufs, setup.Buffers = b, b
	}
	opened, err := a.opts.Open(ctx, setup)
	if err != nil {
		return nil, openError(err, setup.ID)
	}
	s.opened, s.mode = opened, opened.Mode
	if s.mode == "" {
		s.mode = permission.ModeDefault
	}
	if setup.Load && opened.Store != nil {
		stored, err := opened.Store.Get(ctx, setup.ID)
		if err == nil && opened.Root != "" && stored.Root != opened.Root {
			err = sema.Errorf(agent.CodeRootMismatch, "session %s works in %s, not in %s; load it with that cwd", setup.ID, stored.Root, opened.Root)
		}
		if err == nil && stored.Mode != "" {
			s.mode = permission.Mode(stored.Mode)
		}
		if err != nil {
			s.close()
			return nil, openError(err, setup.ID)
		}
	}
	s.startMode = s.mode
	a.mu.Lock()
	a.sessions[setup.ID] = s
	a.mu.Unlock()
	return s, nil
}

// openError is a refusal to open a session as the client reads it: an unknown session
// is a missing resource; anything else is the sentence that says what to change.
func openError(err error, id string) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	data := map[string]string{"sessionId": id}
	var se *sema.Error
	if errors.As(err, &se) {
		data["code"] = se.Code
	}
	if sema.IsCode(err, session.CodeNotFound) {
		return &Error{Code: CodeResourceNotFound, Message: fmt.Sprintf("there is no session %q in sema's store; list them with sema sessions", id), Data: data}
	}
	return &Error{Code: CodeInvalidParams, Message: err.Error(), Data: data}
}

// MCPServers reads the client's MCP servers as the --mcp-config servers are read, so
// a server is checked (its name, its URL) and mounted the same way.
func MCPServers(in []MCPServer) ([]mcp.Server, error) {
	if len(in) == 0 {
		return nil, nil
	}
	doc := map[string]any{}
	for _, s := range in {
		entry := map[string]any{}
		switch s.Type {
		case "http", "sse":
			entry["type"], entry["url"] = s.Type, s.URL
			if len(s.Headers) > 0 {
				h := map[string]string{}
				for _, kv := range s.Headers {
					h[kv.Name] = kv.Value
				}
				entry["headers"] = h
			}
		case "", "stdio":
			entry["command"], entry["args"] = s.Command, s.Args
			if entry["args"] == nil {
				entry["args"] = []string{}
			}
			if len(s.Env) > 0 {
				e := map[string]string{}
				for _, kv := range s.Env {
					e[kv.Name] = kv.Value
				}
				entry["env"] = e
			}
		default:
			return nil, sema.Errorf(mcp.CodeConfigInvalid, "the MCP server %q has the transport %q; sema connects to stdio, http and sse servers", s.Name, s.Type)
		}
		if _, dup := doc[s.Name]; dup {
			return nil, sema.Errorf(mcp.CodeConfigInvalid, "two MCP servers are named %q; give each its own name", s.Name)
		}
		doc[s.Name] = entry
	}
	data, err := json.Marshal(map[string]any{"mcpServers": doc})
	if err != nil {
		return nil, err
	}
	return mcp.ParseConfig(data, "the client's mcpServers")
}
