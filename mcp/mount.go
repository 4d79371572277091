package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/tools"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second  // Options.StartTimeout
	DefaultCallTimeout  = 120 * time.Second // Options.CallTimeout
	DefaultOutputLimit  = 25_000            // Options.OutputLimit, in tokens
	DefaultMessageLimit = 16 << 20          // Options.MessageLimit, in bytes: the SDK's own default bound
)

// bytesPerToken is the size of a token in OutputLimit's reckoning.
const bytesPerToken = 4

// Codes of the mount's errors, notices and error Results.
const (
	// CodeServerFailed announces (a notice) a server that did not start, or ended
	// while the mount was open. Its detail holds "server", "source" and "cause".
	CodeServerFailed = "mcp.server_failed"
	// CodeServerRequired refuses Start: a server marked Required did not start.
	CodeServerRequired = "mcp.server_required_failed"
	// CodeStartCancelled refuses Start: its context ended before every server had
	// started. The error wraps the context's error.
	CodeStartCancelled = "mcp.start_cancelled"
	// CodeToolsChanged announces (a notice) that a server's tool list changed and the
	// mount now shows the new one. Its detail holds "server", "added" and "removed".
	CodeToolsChanged = "mcp.tools_changed"
	// CodeToolSkipped announces (a notice) a tool left out of the mount: a second tool
	// of one server with the same name, or a server listing more tools than the mount
	// takes.
	CodeToolSkipped = "mcp.tool_skipped"
	// CodeOutputTruncated announces (a notice) a call whose text was cut to
	// Options.OutputLimit; the Result says so too.
	CodeOutputTruncated = "mcp.output_truncated"
	// CodeMessageTooLarge is the error Result of a call whose answer was over
	// Options.MessageLimit, and the notice of any other message over it that was
	// dropped.
	CodeMessageTooLarge = "mcp.message_too_large"
	// CodeCallTimeout is the error Result of a call the server did not answer within
	// its call timeout; the call was cancelled.
	CodeCallTimeout = "mcp.call_timeout"
	// CodeServerGone is the error Result of a call to a server that ended, failed, or
	// whose mount was closed.
	CodeServerGone = "mcp.server_gone"
	// CodeToolError is the error Result of a call the tool itself answered as failed
	// (isError); the Result holds the server's text.
	CodeToolError = "mcp.tool_error"
	// CodeCallFailed is the error Result of a call the protocol refused: the server
	// answered with a JSON-RPC error (an unknown tool, invalid arguments, …) or the
	// exchange broke without the server ending.
	CodeCallFailed = "mcp.call_failed"
)

// The states of a server in ServerStatus.State.
const (
	StateConnected = "connected" // started; its tools are mounted
	StateFailed    = "failed"    // did not start, or ended while the mount was open; Error says why
	StateClosed    = "closed"    // the mount was closed
)

// Options configure a Mount. The zero value is usable: every default is written beside
// its field.
type Options struct {
	// Roots are the directories advertised to every server as MCP roots (file://
	// URIs). They must be absolute and should be canonical; the runner passes the
	// leg's roots.
	Roots []string
	// StartTimeout bounds a server's start when the server states none. Zero:
	// DefaultStartTimeout (30 s).
	StartTimeout time.Duration
	// CallTimeout bounds one call when the server states none. Zero:
	// DefaultCallTimeout (120 s).
	CallTimeout time.Duration
	// OutputLimit bounds the text of one call's Result, in tokens of 4 bytes; text
	// beyond it is cut and the Result says how much. Zero: DefaultOutputLimit (25,000
	// tokens, 100,000 bytes).
	OutputLimit int
	// MessageLimit bounds one message from a server, in bytes: what this process
	// reads and decodes of it, whatever its content. A call whose answer is over it
	// fails with CodeMessageTooLarge; over stdio the server goes on serving, while
	// over http and sse the SDK ends the session (its transports cannot skip one
	// message), and the server is then gone. Zero: DefaultMessageLimit (16 MiB).
	MessageLimit int
	// Downsample makes an image a tool returns fit the limits a model accepts
	// (imagefit.MaxBytes, imagefit.MaxDimension) when it is over them, as for the
	// images Read shows. Nil: imagefit.Downsample.
	Downsample imagefit.Downsampler
	// Wrap is how a stdio server's process is started: it gets the request the server
	// would be started with (Argv, Env, Dir) and returns the request to start instead —
	// the runner wraps the server in its kernel sandbox here, which may ask for
	// namespaces of the server's own (Isolate, made as env.ProcAttr makes them). An
	// error refuses to start the server. Nil: as is.
	Wrap func(req env.ExecRequest) (env.ExecRequest, error)
	// Dir is the working directory of stdio servers (the task root). Empty: this
	// process's.
	Dir string
	// Env is the base environment of stdio servers, NAME=value entries; a server's
	// own Env is set on top. Nil: this process's environment as env.Inherit leaves it
	// (no provider key, no credential-shaped variable, no agent socket: a server that
	// needs a token names it in its own env); an empty, non-nil slice: nothing but the
	// server's Env.
	Env []string
	// EnvPassthrough names variables of this process's environment that stdio servers
	// inherit even though the rule holds them back, when Env is nil: exact names and
	// NAME_* prefixes (env.ParsePassthrough; an invalid entry, or one naming a
	// provider's key, refuses the mount). Nil: none.
	EnvPassthrough []string
	// OnNotice receives the mount's notices: a server that failed, a tool list that
	// changed, a tool left out, a truncated output, a message over the limit. Calls
	// are made one at a time, from any goroutine, and must not call back into the
	// Mount's Close. Nil: notices are dropped.
	OnNotice func(sema.Notice)
	// OnChange is called, one call at a time, after a server's tool list changed and
	// Tools returns the new one; it may call Tools and Status. A list_changed after
	// which the tools look the same (names, descriptions, schemas, claims) calls
	// nothing. Nil: nothing is called.
	OnChange func()

	// pass is EnvPassthrough checked, by withDefaults.
	pass env.Passthrough
}

// withDefaults returns o with its zero values replaced by the defaults, or the refusal
// of a value no default can stand for.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.StartTimeout < 0, o.CallTimeout < 0:
		return o, sema.Errorf(CodeConfigInvalid, "the MCP options have a negative timeout; use 0 for the default")
	case o.OutputLimit < 0:
		return o, sema.Errorf(CodeConfigInvalid, "the MCP options have a negative OutputLimit; use 0 for the default")
	case o.MessageLimit < 0:
		return o, sema.Errorf(CodeConfigInvalid, "the MCP options have a negative MessageLimit; use 0 for the default")
	}
	pass, err := env.ParsePassthrough(o.EnvPassthrough, "the MCP options' EnvPassthrough")
	if err != nil {
		return o, err
	}
	o.pass = pass
	for _, r := range o.Roots {
		if !filepath.IsAbs(r) {
			return o, sema.Errorf(CodeConfigInvalid, "the MCP root %q is not an absolute directory; pass canonical absolute paths", r).With("root", r)
		}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.OutputLimit == 0 {
		o.OutputLimit = DefaultOutputLimit
	}
	if o.MessageLimit == 0 {
		o.MessageLimit = DefaultMessageLimit
	}
	return o, nil
}

// Mount is the set of tools of the MCP servers one Start connected to. Its methods may
// be called from any goroutine. Close it when the run ends: it owns the servers'
// processes and connections.
type Mount struct {
	opts    Options
	ctx     context.Context // ends at Close; bounds every call and re-listing
	cancel  context.CancelFunc
	servers []*conn
	http    *http.Transport // the connection pool of the http and sse servers

	mu    sync.Mutex         // guards names and every conn's state, err and tools
	names map[string]toolKey // mounted name -> the tool that holds it

	noticeMu sync.Mutex // one OnNotice or OnChange call at a time

	wg        sync.WaitGroup // the servers' goroutines
	closeOnce sync.Once
}

// toolKey names one tool of one server of a mount.
type toolKey struct {
	server int    // index in Mount.servers
	tool   string // the name the server gave it
}

// ServerStatus is how one server of a mount stands.
type ServerStatus struct {
	// Name is the server's name.
	Name string `json:"name"`
	// Source is where the server was declared.
	Source string `json:"source"`
	// Type is the server's transport: stdio, http or sse.
	Type string `json:"type"`
	// State is StateConnected, StateFailed or StateClosed.
	State string `json:"state"`
	// Error says why a failed server failed; empty otherwise.
	Error string `json:"error,omitempty"`
	// Tools are the names its tools are mounted under, in the server's order.
	Tools []string `json:"tools"`
	// ServerName and ServerVersion are what the server said of itself when it
	// started; empty for a server that did not start.
	ServerName    string `json:"server_name,omitempty"`
	ServerVersion string `json:"server_version,omitempty"` // see ServerName
}

// Start connects to every server, concurrently, each within its start timeout (the
// server's StartTimeout, else opts.StartTimeout), and mounts their tools. ctx bounds
// only the start; the mount lives until Close.
//
// A server that fails to start is announced with the notice CodeServerFailed (detail:
// server, source, cause — for a stdio server the cause quotes the end of its standard
// error) and the mount goes on without its tools; unless the server is Required: then
// Start stops the other servers' starts, closes everything it started, and fails with
// CodeServerRequired. When ctx ends first, Start closes everything and fails with
// CodeStartCancelled, wrapping ctx's error.
//
// Start refuses with CodeConfigInvalid, before starting anything, options with a
// negative value or a relative root, and a server ParseConfig would refuse, a URL or
// header value that is not usable once expanded, or two servers of one name. Start
// does not expand variables: call Server.Expand first.
func Start(ctx context.Context, servers []Server, opts Options) (*Mount, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(servers))
	for _, s := range servers {
		if err := s.validate(); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, configError(s.Source, s.Name, "is given to Start twice; merge the two entries first (a later file's entry replacing an earlier one's)")
		}
		seen[s.Name] = true
	}
	life, cancel := context.WithCancel(context.Background())
	m := &Mount{opts: opts, ctx: life, cancel: cancel, names: make(map[string]toolKey)}
	if base, ok := http.DefaultTransport.(*http.Transport); ok {
		m.http = base.Clone() // the same proxy, dialer and TLS settings, a pool of our own
	} else {
		m.http = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	for i, s := range servers {
		m.servers = append(m.servers, newConn(m, i, s))
	}

	startCtx, stopStarts := context.WithCancel(ctx)
	defer stopStarts()
	type outcome struct {
		c     *conn
		tools []listedTool
		err   error
	}
	results := make(chan outcome, len(m.servers))
	for _, c := range m.servers {
		go func() {
			listed, err := c.start(startCtx)
			results <- outcome{c, listed, err}
		}()
	}
	listed := make([][]listedTool, len(m.servers))
	var required *sema.Error
	for range m.servers {
		r := <-results
		if r.err == nil {
			listed[r.c.index] = r.tools
			continue
		}
		r.c.failStart(r.err)
		if r.c.srv.Required && required == nil && ctx.Err() == nil {
			required = sema.Errorf(CodeServerRequired, "the required MCP server %s did not start: %s", r.c.srv.describe(), sema.MessageOf(r.err)).
				With("server", r.c.srv.Name).With("source", r.c.srv.Source).With("cause", sema.MessageOf(r.err))
			required.Err = r.err
			stopStarts()
		}
	}
	switch {
	case required != nil:
		m.Close()
		return nil, required
	case ctx.Err() != nil:
		m.Close()
		return nil, &sema.Error{Code: CodeStartCancelled, Message: fmt.Sprintf("the MCP servers' start was cancelled: %v", ctx.Err()), Err: ctx.Err()}
	}
	for _, c := range m.servers {
		if c.session == nil {
			m.notice(CodeServerFailed, fmt.Sprintf("the MCP server %s did not start, and its tools are not mounted: %s", c.srv.describe(), c.err), c.failDetail())
			continue
		}
		m.install(c, listed[c.index])
		c.run()
	}
	return m, nil
}

// Tools returns the mounted tools: every connected server's, in the order of the
// servers given to Start, each server's in the order it listed them. A refresh after a
// list change replaces one server's tools at once, so a call never sees half a list.
//
// Every name is unique in the mount. Where two tools would get the same name from
// ToolName — sanitizing made "a.b" and "a_b" one, or servers "a" and "a__b" met in
// mcp__a__b__c — the tool mounted first keeps it and the other gets the hashed form
// of ToolName's long names (cut, "_", 8 hex digits), which stays the same from run to
// run; a name once given to a tool stays its name for as long as its server lists it.
func (m *Mount) Tools() []tools.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tools.Tool
	for _, c := range m.servers {
		for _, t := range c.tools {
			out = append(out, t)
		}
	}
	return out
}

// Status reports every server given to Start, in that order.
func (m *Mount) Status() []ServerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerStatus, len(m.servers))
	for i, c := range m.servers {
		st := ServerStatus{Name: c.srv.Name, Source: c.srv.Source, Type: c.srv.Type, State: c.state, Error: c.err, Tools: []string{}}
		for _, t := range c.tools {
			st.Tools = append(st.Tools, t.spec.Name)
		}
		if c.info != nil {
			st.ServerName, st.ServerVersion = c.info.Name, c.info.Version
		}
		out[i] = st
	}
	return out
}

// Close ends every call in flight (they answer CodeServerGone), closes every session,
// and stops every stdio server: its stdin is closed, then its process group gets
// SIGTERM, then SIGKILL, closeGrace (2 s) apart, and whatever is left of the group
// when the server exits is killed. Servers are closed concurrently. Close returns when
// every server's goroutines have ended; calling it again does nothing and returns nil.
// It always returns nil: a server that does not stop cleanly is stopped by force,
// which is all a caller could do about it.
func (m *Mount) Close() error {
	m.closeOnce.Do(func() {
		m.cancel()
		var wg sync.WaitGroup
		for _, c := range m.servers {
			wg.Go(c.close)
		}
		wg.Wait()
		m.wg.Wait()
		m.http.CloseIdleConnections()
	})
	return nil
}

// notice delivers a notice, one at a time.
func (m *Mount) notice(code, message string, detail map[string]any) {
	if m.opts.OnNotice == nil {
		return
	}
	m.noticeMu.Lock()
	defer m.noticeMu.Unlock()
	m.opts.OnNotice(sema.Notice{Code: code, Message: message, Detail: detail})
}

// changed calls OnChange, one call at a time.
func (m *Mount) changed() {
	if m.opts.OnChange == nil {
		return
	}
	m.noticeMu.Lock()
	defer m.noticeMu.Unlock()
	m.opts.OnChange()
}

// closing reports whether Close has begun.
func (m *Mount) closing() bool { return m.ctx.Err() != nil }

// ServerOf reports whether t is a tool of an MCP server mounted by this package, and
// which server: the runner reads it to know a tool is an MCP tool (whose claims are
// the server's, not the engine's) and to match rules of the form mcp__server.
func ServerOf(t tools.Tool) (string, bool) {
	mt, ok := t.(*tool)
	if !ok || mt == nil {
		return "", false
	}
	return mt.c.srv.Name, true
}

// errNotStarted is the cause of a server whose start Start stopped before it
// finished: a required server failed, or Start's context ended.
var errNotStarted = errors.New("its start was stopped before it finished")
