package server

import (
	"context"
	"errors"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/replay"
	"github.com/sema-agent/sema/sandbox"
	"github.com/sema-agent/sema/session"
)

// ReplayOptions are what `sema serve replay` takes beyond the session.
type ReplayOptions struct {
	// At replays the turns up to and including this one; 0: every turn.
	At int
	// Scratch is the directory to copy the workspace into (empty or missing; kept).
	// Empty: a temporary directory, removed afterwards.
	Scratch string
	// PermissionMode replaces the mode the session recorded; empty keeps it.
	PermissionMode string
}

// ReplaySession replays a session the service recorded, as `sema replay` replays one of
// the command line's (package replay): its model turns from the record, every call run
// again in a scratch copy of its root through today's gate, hooks and sandbox — under
// what a leg of its tenant runs with today: the server's managed settings, the tenant's
// managed settings file, and the tenant policy's deny and ask rules, sandbox and network.
// It reads the store only. The session's root must be on this machine.
func (s *Server) ReplaySession(ctx context.Context, id string, o ReplayOptions) (*replay.Report, error) {
	var tenant string
	err := queryRow(ctx, s.b.db(), `SELECT tenant FROM sema_serve_sessions WHERE id = ?`, []any{id}, &tenant)
	if errors.Is(err, errNoRow) {
		return nil, sema.Errorf(session.CodeNotFound, "the service has no session %s; GET /v1/sessions lists a tenant's", id)
	}
	if err != nil {
		return nil, err
	}
	files, err := s.tenantSettings(ctx, tenant)
	if err != nil {
		return nil, err
	}
	p, err := s.policy(ctx, s.b.db(), tenant)
	if err != nil {
		return nil, err
	}
	spec := agent.TaskSpec{PermissionMode: permission.Mode(o.PermissionMode), DisallowedTools: p.Deny, AskTools: p.Ask}
	if p.Sandbox == "required" {
		spec.Sandbox = sandbox.ModeOn
	}
	if p.Network != "" {
		spec.SandboxNetwork = p.Network
	}
	deps := agent.Deps{Settings: &agent.SettingsOptions{Managed: s.cfg.ManagedSettings, Tenant: files}}
	if d, ok := s.b.(interface{ stateDir() string }); ok {
		deps.StateDir = d.stateDir()
	}
	return replay.Run(ctx, replay.Options{Sessions: s.b.sessions(), History: s.b.history(), SessionID: id,
		At: o.At, Scratch: o.Scratch, Deps: deps, Spec: spec})
}
