package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is the MCP version the client asks for. The SDK's newest
// (2026-07-28) opens with a server/discover probe that servers written against the
// earlier versions — most of those in use — have never seen, and it forbids the roots
// request that this client answers to tell a server its directories; 2025-11-25 is
// the newest version without either, and a server that knows only an older one
// negotiates down from it.
const protocolVersion = "2025-11-25"

// Bounds on what one server may list, so that a server answering every page with
// another cursor, or with thousands of tools, cannot keep a start or a refresh busy or
// fill the model's context with tool definitions.
const (
	maxToolsPerServer = 500
	maxListPages      = 100
)

// relistSpacing is the least time between two re-listings of one server's tools. A
// server that sends list_changed without pause is re-listed at most this often, and
// notifications arriving meanwhile are folded into the next re-listing.
const relistSpacing = 100 * time.Millisecond

// conn is one server of a mount: its configuration, its session once started, and its
// mounted tools.
type conn struct {
	m            *Mount
	index        int
	srv          Server
	startTimeout time.Duration
	callTimeout  time.Duration

	// Set by start, before the conn is shared.
	proc    *process
	session *sdk.ClientSession
	info    *sdk.Implementation

	// Guarded by m.mu.
	state string
	err   string
	tools []*tool
	named map[string]string // the server's tool name -> the name it is mounted under

	refresh   chan struct{} // holds one pending re-listing
	gone      chan struct{} // closed when the session has ended
	overLimit atomic.Bool   // an http or sse message over the limit ended the session
}

// listedTool is a tool as a server listed it.
type listedTool = *sdk.Tool

// newConn makes the conn of server s, the i-th given to Start.
func newConn(m *Mount, i int, s Server) *conn {
	if s.Type == "" {
		s.Type = TypeStdio // validate admitted an empty type only with a command
	}
	return &conn{
		m: m, index: i, srv: s,
		startTimeout: cmp.Or(s.StartTimeout, m.opts.StartTimeout),
		callTimeout:  cmp.Or(s.CallTimeout, m.opts.CallTimeout),
		state:        StateFailed,
		refresh:      make(chan struct{}, 1),
		gone:         make(chan struct{}),
	}
}

// start starts the server, completes the protocol's handshake, and lists its tools,
// all within the server's start timeout.
func (c *conn) start(parent context.Context) ([]listedTool, error) {
	ctx, cancel := context.WithTimeout(parent, c.startTimeout)
	defer cancel()
	client := sdk.NewClient(clientInfo(), &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.listChanged() },
	})
	// AddRoots is deprecated only for the protocol version this client does not ask
	// for (see protocolVersion).
	client.AddRoots(roots(c.m.opts.Roots)...)
	var transport sdk.Transport
	if c.srv.Type == TypeStdio {
		p, err := startProcess(c.srv, &c.m.opts)
		if err != nil {
			return nil, fmt.Errorf("it could not be started: %w", err)
		}
		c.proc = p
		transport = &stdioTransport{p: p, limit: c.m.opts.MessageLimit, dropped: c.dropped}
	} else {
		transport = remoteTransport(c.srv, c.m.http, c.m.opts.MessageLimit, func() { c.overLimit.Store(true) })
	}
	session, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, c.startError(parent, ctx, "it did not complete the MCP handshake", err)
	}
	c.session = session
	listed, err := c.list(ctx)
	if err != nil {
		return nil, c.startError(parent, ctx, "it did not list its tools", err)
	}
	c.info = session.InitializeResult().ServerInfo
	return listed, nil
}

// startError explains a start that failed at step what: parent is Start's context,
// ctx the one bounded by the start timeout.
func (c *conn) startError(parent, ctx context.Context, what string, err error) error {
	switch {
	case parent.Err() != nil:
		return errNotStarted
	case ctx.Err() != nil:
		what = fmt.Sprintf("it did not finish starting within %v", c.startTimeout)
	default:
		what = fmt.Sprintf("%s: %v", what, err)
	}
	if c.proc != nil {
		// A server that died on start has usually written why; give its stderr and
		// its exit a moment to arrive before quoting them.
		c.proc.waitSettled(200 * time.Millisecond)
		if d := c.proc.describe(); d != "" {
			what += "; " + d
		}
	}
	return errors.New(what)
}

// list lists the server's tools, page by page, within the bounds above.
func (c *conn) list(ctx context.Context) ([]listedTool, error) {
	var out []listedTool
	params := &sdk.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("it answered %d pages of tools and was still not done", maxListPages)
		}
		res, err := c.session.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Tools...)
		if res.NextCursor == "" || len(out) >= maxToolsPerServer {
			break
		}
		params.Cursor = res.NextCursor
	}
	if len(out) > maxToolsPerServer {
		c.m.notice(CodeToolSkipped, fmt.Sprintf("the MCP server %q lists more than %d tools; only the first %d are mounted", c.srv.Name, maxToolsPerServer, maxToolsPerServer),
			map[string]any{"server": c.srv.Name, "limit": maxToolsPerServer})
		out = out[:maxToolsPerServer]
	}
	return out, nil
}

// failStart records a server that did not start and stops what it started.
func (c *conn) failStart(err error) {
	c.m.mu.Lock()
	c.state, c.err = StateFailed, err.Error()
	c.m.mu.Unlock()
	c.closeTransport(true)
	c.session = nil
}

// describe names a server in a message: its name, and where it was declared.
func (s Server) describe() string {
	if s.Source == "" {
		return fmt.Sprintf("%q", s.Name)
	}
	return fmt.Sprintf("%q (from %s)", s.Name, s.Source)
}

// failDetail is the detail of the CodeServerFailed notice of c.
func (c *conn) failDetail() map[string]any {
	return map[string]any{"server": c.srv.Name, "source": c.srv.Source, "cause": c.err}
}

// install mounts the tools a server listed at its start.
func (m *Mount) install(c *conn, listed []listedTool) {
	m.mu.Lock()
	mounted, skipped := m.assign(c, listed)
	c.tools, c.state, c.err = mounted, StateConnected, ""
	m.mu.Unlock()
	c.announceSkipped(skipped)
}

// assign gives every tool of listed its mounted name, keeping the names c's tools
// already hold, releasing those of tools no longer listed, and giving the hashed form
// to a tool whose name another tool of the mount holds (see Mount.Tools). It records
// the names in m.names and c.named. A second tool of the same name in one listing, or
// one whose hashed name is taken too, is left out and returned. m.mu must be held.
func (m *Mount) assign(c *conn, listed []listedTool) (mounted []*tool, skipped []string) {
	listedNames := make(map[string]bool, len(listed))
	for _, t := range listed {
		listedNames[t.Name] = true
	}
	for toolName, name := range c.named {
		if !listedNames[toolName] {
			delete(m.names, name)
		}
	}
	named := make(map[string]string, len(listed))
	for _, t := range listed {
		if _, dup := named[t.Name]; dup {
			skipped = append(skipped, t.Name)
			continue
		}
		key := toolKey{server: c.index, tool: t.Name}
		name, held := c.named[t.Name]
		if !held {
			name = ToolName(c.srv.Name, t.Name)
			if holder, taken := m.names[name]; taken && holder != key {
				name = hashedName(plainName(c.srv.Name, t.Name), c.srv.Name, t.Name)
				if holder, taken := m.names[name]; taken && holder != key {
					skipped = append(skipped, t.Name)
					continue
				}
			}
		}
		m.names[name] = key
		named[t.Name] = name
		mounted = append(mounted, newTool(c, t, name))
	}
	c.named = named
	return mounted, skipped
}

// plainName is ToolName before any cut.
func plainName(server, tool string) string {
	return "mcp__" + sanitize(server) + "__" + sanitize(tool)
}

// announceSkipped announces the tools assign left out.
func (c *conn) announceSkipped(skipped []string) {
	if len(skipped) == 0 {
		return
	}
	c.m.notice(CodeToolSkipped, fmt.Sprintf("the MCP server %q lists %q more than once, or under a name another tool holds; only the first is mounted", c.srv.Name, skipped),
		map[string]any{"server": c.srv.Name, "tools": skipped})
}

// run starts the goroutines of a connected server: the re-lister, and the watch for
// the session's end.
func (c *conn) run() {
	c.m.wg.Go(c.relistLoop)
	c.m.wg.Go(c.watch)
}

// listChanged is the SDK's handler for notifications/tools/list_changed. It runs on
// the session's reading goroutine, so it only notes that a re-listing is due: one
// pending note stands for any number of notifications.
func (c *conn) listChanged() {
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}

// relistLoop re-lists the server's tools whenever a change is pending, one re-listing
// at a time and at most one per relistSpacing, until the mount closes or the session
// ends.
func (c *conn) relistLoop() {
	for {
		select {
		case <-c.m.ctx.Done():
			return
		case <-c.gone:
			return
		case <-c.refresh:
		}
		c.relist()
		t := time.NewTimer(relistSpacing)
		select {
		case <-c.m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// relist lists the server's tools again and, when they changed, mounts the new list
// in place of the old one, announces it (CodeToolsChanged) and calls OnChange. A
// listing that fails leaves the mounted tools as they were; a server that is gone is
// announced by watch.
func (c *conn) relist() {
	ctx, cancel := context.WithTimeout(c.m.ctx, c.callTimeout)
	defer cancel()
	listed, err := c.list(ctx)
	if err != nil {
		return
	}
	m := c.m
	m.mu.Lock()
	if c.state != StateConnected {
		m.mu.Unlock()
		return
	}
	old := c.tools
	mounted, skipped := m.assign(c, listed)
	added, removed, changed := diffTools(old, mounted)
	c.tools = mounted
	m.mu.Unlock()
	c.announceSkipped(skipped)
	if !changed {
		return
	}
	m.notice(CodeToolsChanged, fmt.Sprintf("the MCP server %q changed its tools: %d added, %d removed, %d in all", c.srv.Name, len(added), len(removed), len(mounted)),
		map[string]any{"server": c.srv.Name, "added": added, "removed": removed})
	m.changed()
}

// diffTools compares two mounted lists: the names added and removed, and whether
// anything the model or the gate sees differs (a name, an order, a spec).
func diffTools(old, cur []*tool) (added, removed []string, changed bool) {
	oldNames := make(map[string]bool, len(old))
	for _, t := range old {
		oldNames[t.spec.Name] = true
	}
	curNames := make(map[string]bool, len(cur))
	for _, t := range cur {
		curNames[t.spec.Name] = true
		if !oldNames[t.spec.Name] {
			added = append(added, t.spec.Name)
		}
	}
	for _, t := range old {
		if !curNames[t.spec.Name] {
			removed = append(removed, t.spec.Name)
		}
	}
	changed = len(old) != len(cur)
	for i := 0; !changed && i < len(cur); i++ {
		changed = !sameSpec(old[i], cur[i])
	}
	return added, removed, changed
}

// watch waits for the session to end and, unless the mount is closing, records and
// announces the server as failed. Its tools stay mounted: a call to one answers
// CodeServerGone, which tells the model more than a tool that vanished.
func (c *conn) watch() {
	_ = c.session.Wait()
	close(c.gone)
	if c.m.closing() {
		return
	}
	cause := c.endCause()
	if c.proc != nil {
		c.proc.waitSettled(time.Second)
		if d := c.proc.describe(); d != "" {
			cause += "; " + d
		}
	}
	c.m.mu.Lock()
	c.state, c.err = StateFailed, cause
	c.m.mu.Unlock()
	c.m.notice(CodeServerFailed, fmt.Sprintf("the MCP server %s ended while the run was using it, and its tools answer with an error: %s", c.srv.describe(), cause), c.failDetail())
}

// endCause says why the session ended, as far as the client knows.
func (c *conn) endCause() string {
	if c.overLimit.Load() {
		return fmt.Sprintf("the connection ended on a message over the limit of %d bytes", c.m.opts.MessageLimit)
	}
	return "the connection ended"
}

// close ends the server for Mount.Close.
func (c *conn) close() {
	c.closeTransport(false)
	c.m.mu.Lock()
	if c.state == StateConnected {
		c.state = StateClosed
	}
	c.m.mu.Unlock()
}

// closeTransport closes the session and stops the process, at once (kill) for a
// server that failed to start, else the polite way (process.stop). Closing the
// session waits for calls in flight, which the mount's context has ended by then, and
// on a stdio server for its output to end, which stopping the process brings about;
// so the two run side by side.
func (c *conn) closeTransport(kill bool) {
	closed := make(chan struct{})
	if s := c.session; s != nil {
		go func() {
			_ = s.Close()
			close(closed)
		}()
	} else {
		close(closed)
	}
	if p := c.proc; p != nil {
		if kill {
			p.kill()
		} else {
			p.stop()
		}
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
	}
}

// dropped is the frame guard's report of a message over the limit. A response is
// answered to its call, which says so; anything else would vanish unseen.
func (c *conn) dropped(size int64, response bool) {
	if response {
		return
	}
	c.m.notice(CodeMessageTooLarge, fmt.Sprintf("the MCP server %q sent a message of %d bytes, over the limit of %d, and it was dropped", c.srv.Name, size, c.m.opts.MessageLimit),
		map[string]any{"server": c.srv.Name, "size": size, "limit": c.m.opts.MessageLimit})
}

// hasGone reports whether the session has ended, waiting at most d for it to: a call
// that failed on a broken connection may learn of it a moment before the session does.
func (c *conn) hasGone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.gone:
		return true
	case <-t.C:
		return false
	}
}

// roots are the directories as MCP roots.
func roots(dirs []string) []*sdk.Root {
	out := make([]*sdk.Root, 0, len(dirs))
	for _, d := range dirs {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(d)}
		out = append(out, &sdk.Root{URI: u.String(), Name: filepath.Base(d)})
	}
	return out
}

// clientInfo is what the client says of itself: sema, at the version of this module
// the binary was built with.
var clientInfo = sync.OnceValue(func() *sdk.Implementation {
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
		if i := slices.IndexFunc(mods, func(m *debug.Module) bool { return m.Path == "github.com/sema-agent/sema" }); i >= 0 && mods[i].Version != "" {
			version = mods[i].Version
		}
	}
	return &sdk.Implementation{Name: "sema", Version: version}
})
