package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// MaxLine bounds one message: a longer line is answered with a parse error and skipped,
// so a runaway client cannot make the agent hold it all in memory.
const MaxLine = 32 << 20

// Error is a JSON-RPC error object: the answer to a request that failed.
type Error struct {
	// Code is the JSON-RPC code (the Code constants).
	Code int `json:"code"`
	// Message is the sentence saying what was wrong and what to change.
	Message string `json:"message"`
	// Data carries sema's own error code ("code") and the session's id, when known.
	Data any `json:"data,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%s (JSON-RPC %d)", e.Message, e.Code) }

// errorf builds an Error of code.
func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrClosed is what a request to the client returns once the connection is gone.
var ErrClosed = errors.New("acp: the connection is closed")

// Handler serves the requests and notifications a Conn reads.
type Handler interface {
	// Handle answers one request; it runs on its own goroutine, and ctx ends when the
	// client cancels the request ($/cancel_request) or the connection closes. An
	// *Error is sent as it is; any other error as an internal error quoting it.
	Handle(ctx context.Context, method string, params json.RawMessage) (any, error)
	// Notify takes one notification, in the order they came, on the reading goroutine:
	// it must not block.
	Notify(method string, params json.RawMessage)
}

// Conn is one JSON-RPC 2.0 connection over newline-delimited JSON: it reads messages
// from one stream and writes messages to another, one JSON object per line. A line that
// is not a valid message is answered with an error and the connection goes on.
type Conn struct {
	h   Handler
	log io.Writer
	// inline are the methods answered before the next line is read, so that a client
	// that sends its next request without waiting for the answer (session/new, then a
	// prompt in it) finds the state the first one made.
	inline map[string]bool

	wmu sync.Mutex
	w   io.Writer

	mu       sync.Mutex
	next     int64
	pending  map[string]chan *wireMessage // our requests, by id, waiting for the answer
	inflight map[string]context.CancelFunc
	closed   bool
	done     chan struct{}
}

// NewConn returns a connection that writes to w, serves h, and logs what is not
// protocol (a line it could not use, a failed write) to log.
func NewConn(w io.Writer, h Handler, log io.Writer) *Conn {
	if log == nil {
		log = io.Discard
	}
	return &Conn{h: h, log: log, w: w, pending: map[string]chan *wireMessage{},
		inflight: map[string]context.CancelFunc{}, done: make(chan struct{})}
}

// wireMessage is any message as it goes on the wire.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Serve reads messages from r until it ends or ctx does. Then it cancels the requests
// still being handled, fails the requests the agent is waiting on with ErrClosed, and
// waits for every handler to return.
func (c *Conn) Serve(ctx context.Context, r io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer func() {
		c.mu.Lock()
		c.closed = true
		for _, f := range c.inflight {
			f()
		}
		c.mu.Unlock()
		close(c.done)
		cancel()
		wg.Wait()
	}()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if len(line) > 0 || errors.Is(err, errLineTooLong) {
				if errors.Is(err, errLineTooLong) {
					line = nil
				}
				select {
				case lines <- line:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
			if err != nil && !errors.Is(err, errLineTooLong) {
				readErr <- err
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case line := <-lines:
			if line == nil {
				c.reply(nil, nil, errorf(CodeParseError, "the line is longer than %d bytes; send smaller messages", MaxLine))
				continue
			}
			c.handleLine(ctx, line, &wg)
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline; a line over MaxLine is read to its end
// and dropped (errLineTooLong).
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLine+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err != nil {
				return nil, err
			}
			return nil, errLineTooLong
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

// handleLine reads one line as a message and routes it: a request to a handler of its
// own, a notification to Notify, an answer to the request waiting for it.
func (c *Conn) handleLine(ctx context.Context, line []byte, wg *sync.WaitGroup) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return // blank lines between messages are tolerated
	}
	var probe any
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		c.reply(nil, nil, errorf(CodeParseError, "the line is not JSON: %v", err))
		return
	}
	fields, ok := probe.(map[string]any)
	if !ok {
		c.reply(nil, nil, errorf(CodeInvalidRequest, "a message is one JSON object (batches are not part of the protocol)"))
		return
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(trimmed, &raw) // it is an object: this cannot fail
	id, hasID := raw["id"]
	if hasID {
		switch fields["id"].(type) {
		case string, float64, nil:
		default:
			c.reply(nil, nil, errorf(CodeInvalidRequest, "the id must be a string, a number or null"))
			return
		}
	}
	var replyID json.RawMessage
	if hasID {
		replyID = id
	}
	if v, _ := fields["jsonrpc"].(string); v != "2.0" {
		c.reply(replyID, nil, errorf(CodeInvalidRequest, `the message must have "jsonrpc": "2.0"`))
		return
	}
	methodRaw, hasMethod := fields["method"]
	_, hasResult := raw["result"]
	_, hasError := raw["error"]
	if !hasMethod {
		if hasID && (hasResult != hasError) {
			c.answered(id, raw)
			return
		}
		c.reply(replyID, nil, errorf(CodeInvalidRequest, "a message needs a method (a request or notification) or an id with a result or an error (an answer)"))
		return
	}
	method, ok := methodRaw.(string)
	if !ok || method == "" {
		c.reply(replyID, nil, errorf(CodeInvalidRequest, "the method must be a non-empty string"))
		return
	}
	if hasResult || hasError {
		c.reply(replyID, nil, errorf(CodeInvalidRequest, "a request carries no result or error"))
		return
	}
	params := raw["params"]
	if len(params) > 0 {
		switch fields["params"].(type) {
		case map[string]any, []any, nil:
		default:
			c.reply(replyID, nil, errorf(CodeInvalidRequest, "params must be an object or an array"))
			return
		}
	}
	if !hasID {
		if method == MethodCancelRequest {
			c.cancelRequest(params)
			return
		}
		c.h.Notify(method, params)
		return
	}
	if c.inline[method] {
		result, err := c.serve(ctx, method, params)
		c.reply(id, result, err)
		return
	}
	key := string(id)
	rctx, cancel := context.WithCancel(context.WithValue(ctx, requestIDKey{}, key))
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		c.reply(id, nil, errorf(CodeInvalidRequest, "request %s is still being answered; give each request its own id", key))
		return
	}
	c.inflight[key] = cancel
	c.mu.Unlock()
	if st, ok := c.h.(starter); ok {
		// Told before the handler's goroutine runs, so that a notification read next
		// (session/cancel) finds the request.
		st.Started(method, key, params)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, key)
			c.mu.Unlock()
			cancel()
		}()
		result, err := c.serve(rctx, method, params)
		c.reply(id, result, err)
	}()
}

// serve runs the handler of one request; a panic is answered as an internal error.
func (c *Conn) serve(ctx context.Context, method string, params json.RawMessage) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, errorf(CodeInternalError, "the agent failed answering %s: %v", method, p)
		}
	}()
	return c.h.Handle(ctx, method, params)
}

// Inline makes the connection answer methods in the order they come, before reading
// the next line; every other request is answered on a goroutine of its own.
func (c *Conn) Inline(methods ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inline == nil {
		c.inline = map[string]bool{}
	}
	for _, m := range methods {
		c.inline[m] = true
	}
}

// starter is a Handler told of each request it will answer on a goroutine, on the
// reading goroutine, before the next line is read.
type starter interface {
	Started(method, id string, params json.RawMessage)
}

// requestIDKey carries a request's id (as it came, JSON) in its handler's context.
type requestIDKey struct{}

// RequestID is the id of the request ctx answers, as it came (JSON); "" outside one.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// cancelRequest ends the context of the request $/cancel_request names.
func (c *Conn) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	c.mu.Lock()
	f := c.inflight[string(p.RequestID)]
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// answered hands an answer to the request of ours that waits for it.
func (c *Conn) answered(id json.RawMessage, raw map[string]json.RawMessage) {
	m := &wireMessage{ID: id, Result: raw["result"]}
	if e, ok := raw["error"]; ok {
		m.Error = &Error{}
		if json.Unmarshal(e, m.Error) != nil {
			m.Error = &Error{Code: CodeInternalError, Message: "the client answered with an error that is not an error object"}
		}
	}
	c.mu.Lock()
	ch := c.pending[string(id)]
	delete(c.pending, string(id))
	c.mu.Unlock()
	if ch == nil {
		fmt.Fprintf(c.log, "sema acp: an answer to no request of ours (id %s) was dropped\n", id)
		return
	}
	ch <- m
}

// reply writes the answer to request id: result, or err as an error object. A nil id
// (an unreadable message) is written as null.
func (c *Conn) reply(id json.RawMessage, result any, err error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	m := wireMessage{JSONRPC: "2.0", ID: id}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		m.Error = e
	} else {
		if t, ok := result.(answerThen); ok {
			// The answer goes first; what follows it is sent once the client has it.
			defer t.then()
			result = t.result
		}
		b, merr := json.Marshal(result)
		if merr != nil {
			m.Error = errorf(CodeInternalError, "the answer could not be encoded: %v", merr)
		} else {
			m.Result = b
		}
	}
	c.write(m)
}

// answerThen is a handler's result whose answer is followed by more messages: then runs
// once the answer is written (session/new's available commands follow the answer that
// tells the client the session's id).
type answerThen struct {
	result any
	then   func()
}

// Notify sends a notification to the client.
func (c *Conn) Notify(method string, params any) error {
	return c.write(wireMessage{JSONRPC: "2.0", Method: method, Params: params})
}

// Call sends a request to the client and waits for its answer, which it decodes into
// result. It returns ErrClosed when the connection closes first, and ctx's error when
// ctx ends first; an error answer comes back as an *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.next++
	id := json.RawMessage(strconv.FormatInt(c.next, 10))
	ch := make(chan *wireMessage, 1)
	c.pending[string(id)] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, string(id))
		c.mu.Unlock()
	}
	if err := c.write(wireMessage{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		forget()
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m.Error
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return errorf(CodeInvalidParams, "the client's answer to %s does not read: %v", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		forget()
		return ctx.Err()
	case <-c.done:
		forget()
		return ErrClosed
	}
}

// write sends one message as one line.
func (c *Conn) write(m wireMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		fmt.Fprintf(c.log, "sema acp: a message could not be encoded: %v\n", err)
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		fmt.Fprintf(c.log, "sema acp: writing to the client failed: %v\n", err)
		return err
	}
	return nil
}
