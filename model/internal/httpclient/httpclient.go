// Package httpclient is the HTTP transport a provider sends its requests over when its
// caller gives it no client of its own, and how a provider finishes a stream's body so
// that its connection carries the next request.
package httpclient

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// IdlePerHost is how many idle connections a provider keeps open to its API's host.
// http.DefaultTransport keeps two: a service whose thousand sessions share one provider
// then dialled anew for nearly every request to an HTTP/1.1 server (Ollama, vLLM, a
// gateway), leaving a closed connection in TIME_WAIT each time. An idle connection is
// still closed after the transport's IdleConnTimeout (90 s).
const IdlePerHost = 1024

// Transport returns a clone of http.DefaultTransport that keeps up to IdlePerHost idle
// connections to a host (and as many in all), and whose connections copy a request's
// body through a pooled buffer (copyConn).
func Transport() *http.Transport {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	t = t.Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = IdlePerHost, IdlePerHost
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	// ForceAttemptHTTP2 (cloned) keeps HTTP/2 over TLS with a dialer of our own.
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return copyConn{c}, nil
	}
	return t
}

// copyConn is a dialled connection whose ReadFrom copies through a pooled buffer. Over
// HTTP/1.1, net/http hands the part of a request body past its 4 KiB write buffer to the
// connection's ReadFrom, and a TCP connection's falls back to io.Copy, which allocated a
// buffer of up to 32 KiB for every request: a sixth of all a busy service allocated,
// whose conversations are resent whole each turn. (Over TLS the transport writes through
// the TLS connection, and HTTP/2 through its own pooled frames.)
type copyConn struct{ net.Conn }

// copyBufs are copyConn's buffers, the size io.Copy would allocate.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (c copyConn) ReadFrom(r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	// writerOnly hides c's own ReadFrom, which io.CopyBuffer would call back.
	return io.CopyBuffer(writerOnly{c.Conn}, r, *bp)
}

type writerOnly struct{ io.Writer }

// drainWait and drainMax bound what Drain reads of a complete stream's body.
const (
	drainWait = time.Second
	drainMax  = 64 << 10
)

// Drain reads what is left of a complete stream's body — the end of its chunked
// framing, usually already received — closes it, and then calls cancel (the request's
// context's). A provider stops reading at the stream's last event, and an HTTP/1.1
// connection whose body is closed before its end is not used again: every request to
// a local server or a gateway dialled anew (and, over TLS, shook hands anew). A server
// that keeps the body open past drainWait, or sends more than drainMax after the last
// event, loses the connection instead. It blocks: run it on a goroutine of its own.
func Drain(body io.ReadCloser, cancel func()) {
	t := time.AfterFunc(drainWait, cancel)
	io.CopyN(io.Discard, body, drainMax)
	t.Stop()
	body.Close()
	cancel()
}
