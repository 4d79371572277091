package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteRetries is how often the streamable HTTP transport re-opens a broken stream
// before the session ends. The SDK's default (5, with a backoff growing to 30 s)
// would keep a call to a server that went away waiting for minutes; a call has its own
// timeout, and a server that is gone should be reported as gone.
const remoteRetries = 2

// remoteTransport is the transport of an http or sse server: the SDK's, over an HTTP
// client that adds the server's headers and bounds every message to limit bytes.
// overLimit is called when a message over the limit ended the connection.
func remoteTransport(s Server, base http.RoundTripper, limit int, overLimit func()) sdk.Transport {
	client := &http.Client{Transport: &headerTransport{base: base, headers: s.Headers, limit: int64(limit), overLimit: overLimit}}
	if s.Type == TypeSSE {
		return &detachedTransport{inner: &sdk.SSEClientTransport{Endpoint: s.URL, HTTPClient: client, MaxEventSize: limit}}
	}
	return &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client, MaxEventSize: limit, MaxRetries: remoteRetries}
}

// errMessageTooLarge ends the reading of a JSON response body over the limit.
var errMessageTooLarge = errors.New("the server's message is over the client's limit for one message")

// headerTransport adds a server's configured headers to every request, never replacing
// a header the SDK set (the protocol's own: Accept, Content-Type, Mcp-Session-Id,
// Mcp-Protocol-Version), and bounds every JSON response body to limit bytes. Bodies of
// server-sent events are bounded by the SDK, one event at a time (MaxEventSize): a
// stream carries many messages and must not be bounded as a whole; they are watched
// only to learn that an event over the limit is what ended the connection, which the
// SDK does not say.
type headerTransport struct {
	base      http.RoundTripper
	headers   map[string]string
	limit     int64
	overLimit func()
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context()) // a RoundTripper must not change its request
		for k, v := range t.headers {
			if req.Header.Get(k) == "" {
				req.Header.Set(k, v)
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt {
	case "application/json":
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit, overLimit: t.overLimit}
	case "text/event-stream":
		resp.Body = &eventWatch{ReadCloser: resp.Body, limit: max(t.limit-eventSlack, t.limit/2), overLimit: t.overLimit}
	}
	return resp, nil
}

// limitedBody fails a read past its limit instead of handing the bytes on.
type limitedBody struct {
	io.ReadCloser
	left      int64
	overLimit func()
}

// Read implements io.Reader.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errMessageTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more tells an exact fit from an overflow
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.overLimit()
		return n - 1, errMessageTooLarge
	}
	return n, err
}

// eventSlack is how far below the limit eventWatch reports an event: the SDK counts
// an event's bytes its own way (field names, line ends), and an event the SDK refuses
// must never pass unreported. A report only explains a connection that ended; it ends
// nothing itself.
const eventSlack = 4 << 10

// eventWatch counts the bytes of each server-sent event (up to the blank line that
// ends it) as they pass, and reports an event over limit.
type eventWatch struct {
	io.ReadCloser
	limit     int64
	overLimit func()
	size      int64 // bytes of the current event so far
	newline   bool  // the last byte that was not '\r' was '\n'
	reported  bool
}

// Read implements io.Reader.
func (w *eventWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.size += int64(len(b))
			if len(bytes.TrimRight(b, "\r")) > 0 {
				w.newline = false
			}
			break
		}
		line := b[:i]
		w.size += int64(i + 1)
		if w.newline && len(bytes.TrimRight(line, "\r")) == 0 {
			w.size = 0 // a blank line: the event ended
		}
		w.newline = true
		b = b[i+1:]
		if w.size > w.limit && !w.reported {
			w.reported = true
			w.overLimit()
		}
	}
	if w.size > w.limit && !w.reported {
		w.reported = true
		w.overLimit()
	}
	return n, err
}

// detachedTransport connects an SSE transport, whose event stream lives as long as the
// context its Connect is given, with a context that lives as long as the connection
// instead; the context Connect gets bounds only the connecting. Without it the stream
// of a server would end when the start timeout's context is released.
type detachedTransport struct {
	inner sdk.Transport
}

// Connect implements sdk.Transport.
func (t *detachedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	type result struct {
		conn sdk.Connection
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := t.inner.Connect(life)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		return &cancelOnClose{Connection: r.conn, cancel: cancel}, nil
	case <-ctx.Done():
		cancel() // ends the connecting, and a connection made meanwhile
		go func() {
			if r := <-done; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("connecting: %w", ctx.Err())
	}
}

// cancelOnClose ends a detached connection's context when the connection is closed.
type cancelOnClose struct {
	sdk.Connection
	cancel context.CancelFunc
}

// Close implements sdk.Connection.
func (c *cancelOnClose) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
