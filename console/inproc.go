package console

import (
	"io"
	"net/http"
	"sync"
)

// inproc is a RoundTripper that calls the API's handler in this process: the console
// is a client of the API like any other (every call carries the signed-in tenant's
// token and is judged by the API), without a network hop. The inner request keeps the
// outer one's address, host and TLS state, so the API's per-address limits and the
// links' URLs see the person's browser, not the console.
type inproc struct {
	api  http.Handler
	from *http.Request
}

func (t inproc) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr, in.Host, in.TLS = t.from.RemoteAddr, t.from.Host, t.from.TLS
	if in.Body == nil {
		in.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.start(http.StatusOK)
			pw.Close()
		}()
		t.api.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.Close()
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status: http.StatusText(w.code), StatusCode: w.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req,
	}, nil
}

// pipeWriter is the inner ResponseWriter: the status and headers are handed over at
// the first write or flush, and the body streams through a pipe, so an event stream
// passes as it is written.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	code   int
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) start(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) WriteHeader(code int) { w.start(code) }

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.start(http.StatusOK)
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() { w.start(http.StatusOK) }
