package server

import (
	"context"
	"net/http"
	"time"

	"github.com/sema-agent/sema/console"
)

// newConsole makes the web console the API serves at "/" (every path outside /v1/
// that no API route takes). The console calls the API in-process, through the same
// routes as any client, with the signed-in tenant's token; its cookie key is kept in
// the store, so every process of a deployment opens the others' cookies.
func (s *Server) newConsole(ctx context.Context) (http.Handler, error) {
	key, err := s.consoleKey(ctx)
	if err != nil {
		return nil, err
	}
	return console.New(console.Config{
		API:       http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }),
		Key:       key,
		PublicURL: s.cfg.PublicURL,
		Logger:    s.log,
	})
}

// The console's sign-in, per address: a burst of signinBurst tries, then one every
// signinEvery.
const (
	signinBurst = 10
	signinEvery = 6 * time.Second
)
