// Package httpclient is the HTTP transport a provider sends its requests over when its
// caller gives it no client of its own.
package httpclient

import "net/http"

// IdlePerHost is how many idle connections a provider keeps open to its API's host.
// http.DefaultTransport keeps two: a service whose thousand sessions share one provider
// then dialled anew for nearly every request to an HTTP/1.1 server (Ollama, vLLM, a
// gateway), leaving a closed connection in TIME_WAIT each time. An idle connection is
// still closed after the transport's IdleConnTimeout (90 s).
const IdlePerHost = 1024

// Transport returns a clone of http.DefaultTransport that keeps up to IdlePerHost idle
// connections to a host (and as many in all).
func Transport() *http.Transport {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	t = t.Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = IdlePerHost, IdlePerHost
	return t
}
