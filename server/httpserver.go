package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sema-agent/sema"
)

// Codes of the HTTP server's refusals.
const (
	// CodeTLSInvalid: a certificate without its key (or the reverse), or a pair that
	// cannot be loaded.
	CodeTLSInvalid = "serve.tls_invalid"
	// CodeTooManyConnections: the client's address has as many connections open as
	// HTTPOptions.MaxConnsPerIP allows.
	CodeTooManyConnections = "serve.too_many_connections"
	// CodeTooManyRequests: the tenant has as many requests in progress (event streams
	// included) as HTTPOptions.MaxRequestsPerTenant allows.
	CodeTooManyRequests = "tenant.too_many_requests"
)

// The defaults of HTTPOptions: a client gets 10 s to send its headers and 30 s for the
// whole request (a 1 MB body at 35 KB/s), 30 s to take an answer, and an idle
// keep-alive connection is closed after a minute.
const (
	DefaultReadHeaderTimeout    = 10 * time.Second // HTTPOptions.ReadHeaderTimeout
	DefaultReadTimeout          = 30 * time.Second // HTTPOptions.ReadTimeout
	DefaultWriteTimeout         = 30 * time.Second // HTTPOptions.WriteTimeout
	DefaultIdleTimeout          = time.Minute      // HTTPOptions.IdleTimeout
	DefaultMaxConnsPerIP        = 64               // HTTPOptions.MaxConnsPerIP
	DefaultMaxRequestsPerTenant = 256              // HTTPOptions.MaxRequestsPerTenant
)

// HTTPOptions are the limits of the service's HTTP server. A zero duration or count is
// its default; a negative one is refused (serve.config_invalid).
type HTTPOptions struct {
	// ReadHeaderTimeout bounds the reading of a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, body included, from its first
	// byte: a client that sends its body a byte at a time is cut off after it, with or
	// without a valid token. Not shorter than ReadHeaderTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of an answer. An event stream is not one answer:
	// each of its writes gets WriteTimeout, so it stays open as long as its events flow
	// and a client that stops reading is cut off.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has carried no request for this
	// long.
	IdleTimeout time.Duration
	// MaxConnsPerIP is how many connections one client address may hold open at once;
	// the next one is answered 503 serve.too_many_connections (with Retry-After) and
	// closed.
	MaxConnsPerIP int
	// NoConnLimit lifts MaxConnsPerIP: behind a reverse proxy every connection comes
	// from the proxy's address, and the proxy limits its clients.
	NoConnLimit bool
	// MaxRequestsPerTenant is how many requests one tenant may have in progress at once,
	// from any number of addresses; an open event stream is one. The next is answered
	// 429 tenant.too_many_requests (with Retry-After).
	MaxRequestsPerTenant int
	// NoTenantLimit lifts MaxRequestsPerTenant.
	NoTenantLimit bool
	// TLSCert and TLSKey are PEM files: with both, the server speaks only TLS (1.2 and
	// later, HTTP/2 offered). One without the other is refused (serve.tls_invalid).
	TLSCert, TLSKey string
}

// check fills in the defaults and refuses a value out of its range by name.
func (o *HTTPOptions) check() error {
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ReadHeaderTimeout", &o.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"ReadTimeout", &o.ReadTimeout, DefaultReadTimeout},
		{"WriteTimeout", &o.WriteTimeout, DefaultWriteTimeout},
		{"IdleTimeout", &o.IdleTimeout, DefaultIdleTimeout},
	} {
		if *f.v < 0 {
			return sema.Errorf(CodeConfigInvalid, "HTTPOptions.%s cannot be negative; leave it zero for the default (%s)", f.name, f.def).With("field", f.name)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.ReadHeaderTimeout > o.ReadTimeout {
		return sema.Errorf(CodeConfigInvalid, "HTTPOptions.ReadHeaderTimeout (%s) cannot be longer than ReadTimeout (%s), which bounds the whole request", o.ReadHeaderTimeout, o.ReadTimeout).With("field", "ReadHeaderTimeout")
	}
	if o.MaxConnsPerIP < 0 {
		return sema.Errorf(CodeConfigInvalid, "HTTPOptions.MaxConnsPerIP cannot be negative; leave it zero for the default (%d), or set NoConnLimit", DefaultMaxConnsPerIP).With("field", "MaxConnsPerIP")
	}
	if o.MaxConnsPerIP == 0 {
		o.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if o.MaxRequestsPerTenant < 0 {
		return sema.Errorf(CodeConfigInvalid, "HTTPOptions.MaxRequestsPerTenant cannot be negative; leave it zero for the default (%d), or set NoTenantLimit", DefaultMaxRequestsPerTenant).With("field", "MaxRequestsPerTenant")
	}
	if o.MaxRequestsPerTenant == 0 {
		o.MaxRequestsPerTenant = DefaultMaxRequestsPerTenant
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return sema.Errorf(CodeTLSInvalid, "TLS needs both a certificate and its key (--tls-cert and --tls-key); one was given without the other")
	}
	return nil
}

// HTTPServer serves a Server's API with HTTPOptions' limits.
type HTTPServer struct {
	hs      *http.Server
	conns   *connLimit
	tenants *tenantLimit
}

// HTTPServer returns the HTTP server of the API with o's limits; Serve runs it on a
// listener. A certificate that cannot be loaded is refused here, before anything
// listens.
func (s *Server) HTTPServer(o HTTPOptions) (*HTTPServer, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	h := &HTTPServer{}
	if !o.NoTenantLimit {
		h.tenants = &tenantLimit{max: o.MaxRequestsPerTenant, per: map[string]int{}}
	}
	if !o.NoConnLimit {
		h.conns = &connLimit{max: o.MaxConnsPerIP, open: map[net.Conn]string{}, per: map[string]int{}}
	}
	handler := s.Handler()
	if h.conns != nil {
		handler = h.conns.refuse(s, handler)
	}
	h.hs = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		// Headers are a few hundred bytes; Go's default allows a megabyte.
		MaxHeaderBytes: 64 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = context.WithValue(ctx, httpOptionsKey, &o)
			if h.tenants != nil {
				ctx = context.WithValue(ctx, tenantLimitKey, h.tenants)
			}
			if h.conns != nil && !h.conns.admit(c) {
				ctx = context.WithValue(ctx, overCapKey, true)
			}
			return ctx
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if h.conns != nil && (st == http.StateClosed || st == http.StateHijacked) {
				h.conns.release(c)
			}
		},
		// The server's own complaints (a failed TLS handshake, a broken connection) go
		// to the service's structured log, not as bare lines to standard error.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, sema.Errorf(CodeTLSInvalid, "cannot load the TLS certificate %s and key %s: %v; give a PEM certificate and its matching PEM key", o.TLSCert, o.TLSKey, err)
		}
		h.hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return h, nil
}

// TLS reports whether the server speaks TLS.
func (h *HTTPServer) TLS() bool { return h.hs.TLSConfig != nil }

// Serve answers on ln until Shutdown; it returns http.ErrServerClosed then.
func (h *HTTPServer) Serve(ln net.Listener) error {
	if h.TLS() {
		// The certificate is in TLSConfig already: no file names here.
		return h.hs.ServeTLS(ln, "", "")
	}
	return h.hs.Serve(ln)
}

// Shutdown stops listening and closes idle connections, then waits for the answers in
// progress until ctx ends.
func (h *HTTPServer) Shutdown(ctx context.Context) error { return h.hs.Shutdown(ctx) }

// Close closes every connection at once, event streams included.
func (h *HTTPServer) Close() error { return h.hs.Close() }

type httpKey int

const (
	httpOptionsKey httpKey = iota + 1
	overCapKey
	tenantLimitKey
)

// moreWrites gives an event stream's next write WriteTimeout from now. The server's
// write deadline is for a whole answer, and a stream outlives it: with a deadline per
// write a client that reads is never cut off, and one that stops reading is after
// WriteTimeout. (Its read deadline needs nothing: the server lifts it once the request
// is read.)
func moreWrites(r *http.Request, rc *http.ResponseController) {
	if o, ok := r.Context().Value(httpOptionsKey).(*HTTPOptions); ok {
		rc.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
	}
}

// connLimit counts the open connections of each client address.
type connLimit struct {
	max  int
	mu   sync.Mutex
	open map[net.Conn]string // the admitted connections and their addresses
	per  map[string]int
}

// admit counts c against its address, unless the address has max open already: then
// c is not counted, and its requests are refused.
func (l *connLimit) admit(c net.Conn) bool {
	ip := clientIP(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.per[ip] >= l.max {
		return false
	}
	l.per[ip]++
	l.open[c] = ip
	return true
}

func (l *connLimit) release(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ip, ok := l.open[c]
	if !ok {
		return
	}
	delete(l.open, c)
	if l.per[ip]--; l.per[ip] == 0 {
		delete(l.per, ip)
	}
}

// refuse answers every request of a connection over its address's limit 503, and
// closes the connection after it. The connection is accepted and answered in HTTP
// (over TLS when the server speaks TLS) rather than reset, so that the client learns
// why and when to come back; it holds nothing the limit counts.
func (l *connLimit) refuse(s *Server, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if over, _ := r.Context().Value(overCapKey).(bool); !over {
			h.ServeHTTP(w, r)
			return
		}
		s.metrics.requests.WithLabelValues("over_connection_limit", "503").Inc()
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		writeErr(w, r, http.StatusServiceUnavailable, sema.Errorf(CodeTooManyConnections, "this address has %d connections open to the service, as many as it may; close one (or reuse a keep-alive connection) and retry", l.max).With("limit", l.max))
	})
}

// clientIP is the host part of a connection's remote address: the limit is per address,
// not per port.
func clientIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// CodeRequestTimeout: the request's body did not arrive within HTTPOptions.ReadTimeout.
const CodeRequestTimeout = "request.timeout"

// bodyTimedOut answers a body that stopped arriving before the read deadline 408, and
// reports whether it did: it is not a body too large.
func bodyTimedOut(w http.ResponseWriter, r *http.Request, err error) bool {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return false
	}
	w.Header().Set("Connection", "close")
	writeErr(w, r, http.StatusRequestTimeout, sema.Errorf(CodeRequestTimeout, "the request's body did not arrive within the server's read timeout; send it at once"))
	return true
}

// tenantLimit counts the requests in progress of each tenant.
type tenantLimit struct {
	max int
	mu  sync.Mutex
	per map[string]int
}

// tenantSlot counts r against its tenant for as long as it is in progress: the caller
// calls release when it is done. A tenant at its limit is answered 429 here, and ok is
// false. Outside an HTTPServer (a bare Handler) nothing is counted.
func tenantSlot(w http.ResponseWriter, r *http.Request, tenant string) (release func(), ok bool) {
	l, _ := r.Context().Value(tenantLimitKey).(*tenantLimit)
	if l == nil {
		return func() {}, true
	}
	l.mu.Lock()
	if l.per[tenant] >= l.max {
		l.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeErr(w, r, http.StatusTooManyRequests, sema.Errorf(CodeTooManyRequests, "this tenant has %d requests in progress (event streams included), as many as it may; close a stream or wait for an answer, and retry", l.max).With("limit", l.max))
		return nil, false
	}
	l.per[tenant]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.per[tenant]--; l.per[tenant] == 0 {
			delete(l.per, tenant)
		}
	}, true
}
