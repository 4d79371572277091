package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/server"
)

// TestRecoveryConfigOutOfRange: a negative heartbeat, dead-worker threshold, model wait
// or model backoff is refused by name, never read as the default.
func TestRecoveryConfigOutOfRange(t *testing.T) {
	open := func(string) (model.Provider, string, error) { return nil, "", errors.New("unused") }
	for name, cfg := range map[string]server.Config{
		"Heartbeat":    {Heartbeat: -time.Second},
		"DeadAfter":    {DeadAfter: -time.Second},
		"ModelWait":    {ModelWait: -time.Second},
		"ModelBackoff": {ModelBackoff: -time.Second},
	} {
		cfg.Home, cfg.OpenProvider = t.TempDir(), open
		s, err := server.New(context.Background(), cfg)
		if err == nil {
			s.Close()
		}
		if sema.CodeOf(err) != server.CodeConfigInvalid || !strings.Contains(err.Error(), name) {
			t.Errorf("Config.%s negative: %v", name, err)
		}
	}
	// A heartbeat that one missed beat would make look dead is refused, never defaulted.
	s, err := server.New(context.Background(), server.Config{Home: t.TempDir(), OpenProvider: open, Heartbeat: 3 * time.Second})
	if err == nil {
		s.Close()
	}
	if sema.CodeOf(err) != server.CodeConfigInvalid || !strings.Contains(err.Error(), "DeadAfter") {
		t.Errorf("DeadAfter under twice Heartbeat: %v", err)
	}
}
