package server

import (
	"context"
	"net/http"
)

// newConsole makes the web console the API mounts at "/".
func (s *Server) newConsole(ctx context.Context) (http.Handler, error) {
	if _, err := s.consoleKey(ctx); err != nil {
		return nil, err
	}
	return nil, nil
}
