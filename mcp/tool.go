package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sema-agent/sema/tools"
)

// Bounds on what a server's tool listing puts before the model.
const (
	// maxDescription caps a tool's description: a server's text goes into every
	// request's tool list, and one that runs to pages crowds out the task.
	maxDescription = 2 << 10
	// maxSchema caps a tool's input schema; a larger one is replaced by the schema of
	// any object, and the server still checks the input it gets.
	maxSchema = 64 << 10
)

// anyObject is the input schema of a tool whose own is missing, too large, or not the
// schema of an object (which the providers require).
var anyObject = json.RawMessage(`{"type":"object"}`)

// tool is one tool of a server, as the engine sees it.
type tool struct {
	c    *conn
	name string // the server's name for it, which calls use
	spec tools.Spec
}

// newTool makes the engine's tool of the server's tool t, mounted under name.
func newTool(c *conn, t *sdk.Tool, name string) *tool {
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = fmt.Sprintf("The tool %q of the MCP server %q (it gave no description).", t.Name, c.srv.Name)
	}
	schema, ok := objectSchema(t.InputSchema)
	if !ok {
		desc += "\n\n(The server's input schema is missing, larger than 64 KiB, or not the schema of an object; the input is checked by the server.)"
	}
	spec := tools.Spec{
		Name:                    name,
		Description:             clip(desc, maxDescription),
		InputSchema:             schema,
		Effect:                  "", // undeclared: the server's claims are hints, not declarations
		PermissionSeat:          tools.SeatPassthrough,
		ReadOnlyHint:            t.Annotations != nil && t.Annotations.ReadOnlyHint,
		RequiresUserInteraction: requiresUserInteraction(t.Meta),
	}
	return &tool{c: c, name: t.Name, spec: spec}
}

// objectSchema returns the JSON of a server's input schema when it is an object schema
// ("type": "object") of at most maxSchema bytes, else anyObject and false.
func objectSchema(schema any) (json.RawMessage, bool) {
	if schema == nil {
		return anyObject, false
	}
	raw, err := json.Marshal(schema)
	if err != nil || len(raw) > maxSchema {
		return anyObject, false
	}
	var head struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &head) != nil || head.Type != "object" {
		return anyObject, false
	}
	return raw, true
}

// requiresUserInteraction reads a tool's _meta for the declaration that every call
// must be put to a person. The MCP specification has no standard annotation for it;
// "requiresUserInteraction" (or "requires_user_interaction") set to true in a tool's
// _meta is the equivalent declaration this client honours (tools.Spec's
// RequiresUserInteraction). The string "true" counts too: the declaration asks for
// more caution, so a server that spelled it loosely is taken at its word.
func requiresUserInteraction(meta sdk.Meta) bool {
	for _, key := range []string{"requiresUserInteraction", "requires_user_interaction"} {
		switch v := meta[key].(type) {
		case bool:
			if v {
				return true
			}
		case string:
			if strings.EqualFold(v, "true") {
				return true
			}
		}
	}
	return false
}

// sameSpec reports whether two mounted tools look the same to the model and the gate.
func sameSpec(a, b *tool) bool {
	x, y := a.spec, b.spec
	return a.name == b.name && x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.InputSchema, y.InputSchema) &&
		x.ReadOnlyHint == y.ReadOnlyHint && x.RequiresUserInteraction == y.RequiresUserInteraction
}

// Spec implements tools.Tool. The InputSchema it returns is shared: read it, do not
// change it.
func (t *tool) Spec() tools.Spec { return t.spec }

// Run implements tools.Tool: it calls the tool on its server, within the server's call
// timeout, and turns the answer into a Result (see convert). Every failure is an error
// Result: CodeServerGone, CodeCallTimeout, CodeMessageTooLarge, CodeCallFailed,
// CodeToolError, tools.CodeInputInvalid for an input that is not a JSON object, and
// tools.CodeCancelled when ctx ended.
func (t *tool) Run(ctx context.Context, input json.RawMessage) tools.Result {
	args := bytes.TrimSpace(input)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return tools.Fail(tools.CodeInputInvalid, "the input of %s must be a JSON object", t.spec.Name)
	}
	c := t.c
	if r, gone := t.unavailable(); gone {
		return r
	}
	timeout := c.callTimeout
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(c.m.ctx, cancel) // Close ends every call
	defer stop()
	res, err := c.session.CallTool(callCtx, &sdk.CallToolParams{Name: t.name, Arguments: json.RawMessage(args)})
	if err != nil {
		return t.callError(ctx, callCtx, err, timeout)
	}
	return c.m.convert(ctx, t, res)
}

// unavailable answers a call to a server that is not connected.
func (t *tool) unavailable() (tools.Result, bool) {
	c := t.c
	c.m.mu.Lock()
	state, why := c.state, c.err
	c.m.mu.Unlock()
	switch {
	case c.m.closing() || state == StateClosed:
		return tools.Fail(CodeServerGone, "the MCP server %q is closed: the run that mounted it has ended", c.srv.Name), true
	case state != StateConnected:
		return tools.Fail(CodeServerGone, "the MCP server %q is gone (%s), so %s cannot be called", c.srv.Name, why, t.spec.Name), true
	}
	return tools.Result{}, false
}

// callError turns a failed call into its error Result.
func (t *tool) callError(ctx, callCtx context.Context, err error, timeout time.Duration) tools.Result {
	c := t.c
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return tools.Fail(tools.CodeCancelled, "the call of %s was cancelled", t.spec.Name)
	case c.m.closing():
		return tools.Fail(CodeServerGone, "the MCP server %q was closed during the call of %s", c.srv.Name, t.spec.Name)
	case callCtx.Err() != nil:
		return tools.Fail(CodeCallTimeout, "the MCP server %q did not answer the call of %s within %v, and the call was cancelled; if the tool needs longer, raise callTimeoutMs in the server's configuration",
			c.srv.Name, t.spec.Name, timeout)
	case errors.As(err, &rpcErr) && rpcErr.Code == rpcMessageTooLarge:
		return tools.Fail(CodeMessageTooLarge, "the answer of %s was too large to read: %s; ask for less at a time", t.spec.Name, rpcErr.Message)
	case errors.As(err, &rpcErr):
		return tools.Fail(CodeCallFailed, "the MCP server %q refused the call of %s: %s (JSON-RPC error %d)", c.srv.Name, t.spec.Name, clip(rpcErr.Message, 2000), rpcErr.Code)
	case errors.Is(err, errMessageTooLarge) || c.overLimit.Load():
		return tools.Fail(CodeMessageTooLarge, "the answer of %s was over the limit of %d bytes for one message, and over HTTP that ends the connection: the MCP server %q is gone for the rest of the run",
			t.spec.Name, c.m.opts.MessageLimit, c.srv.Name)
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), c.hasGone(200 * time.Millisecond):
		why := c.endCause()
		if c.proc != nil {
			c.proc.waitSettled(200 * time.Millisecond)
			if d := c.proc.describe(); d != "" {
				why += "; " + d
			}
		}
		return tools.Fail(CodeServerGone, "the MCP server %q went away during the call of %s (%s)", c.srv.Name, t.spec.Name, clip(why, 2000))
	}
	return tools.Fail(CodeCallFailed, "the call of %s to the MCP server %q failed: %s", t.spec.Name, c.srv.Name, clip(err.Error(), 2000))
}

// IsTool reports whether t is a tool an MCP server serves: its work happens in the
// server, a process of its own, which may change files the runner cannot see it change.
func IsTool(t tools.Tool) bool {
	_, ok := t.(*tool)
	return ok
}
