package server

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sema-agent/sema/settings"
)

// A tenant's managed settings: a settings file (the format of the machine's managed
// policy, see package settings) the operator attaches to one tenant. Its rules, sandbox
// and hooks apply to that tenant's legs only, as a managed layer on top of the
// server-wide one (Config.ManagedSettings), which still applies to every tenant: a deny
// in either binds. The store keeps the file's text, so that every node applies the same
// file, and the path it was read from, for the operator.

// SetTenantSettings attaches the managed settings data (read from path) to tenant name,
// replacing any it had; the legs that start from now on run under it. A document that
// does not parse as a managed settings file is refused (its settings code) and nothing
// changes. Empty data detaches the tenant's file.
func (s *Server) SetTenantSettings(ctx context.Context, name, path string, data []byte) error {
	if len(data) > 0 {
		if _, err := settings.Parse(data, path, settings.Managed); err != nil {
			return err
		}
	}
	return s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		if err := tenantExists(ctx, c, name); err != nil {
			return err
		}
		if _, err := c.exec(ctx, `DELETE FROM sema_serve_tenant_settings WHERE tenant = ?`, name); err != nil || len(data) == 0 {
			return err
		}
		_, err := c.exec(ctx, `INSERT INTO sema_serve_tenant_settings (tenant, path, data) VALUES (?, ?, ?)`, name, path, string(data))
		return err
	})
}

// TenantSettings returns the path and text of the managed settings attached to tenant
// name; empty when it has none.
func (s *Server) TenantSettings(ctx context.Context, name string) (path string, data []byte, err error) {
	var text string
	err = queryRow(ctx, s.b.db(), `SELECT path, data FROM sema_serve_tenant_settings WHERE tenant = ?`, []any{name}, &path, &text)
	if errors.Is(err, errNoRow) {
		return "", nil, nil
	}
	return path, []byte(text), err
}

// tenantSettings parses the managed settings attached to tenant name for a leg: none,
// or one file, labelled by the tenant (the operator's path is not the tenant's to see).
func (s *Server) tenantSettings(ctx context.Context, name string) ([]settings.File, error) {
	_, data, err := s.TenantSettings(ctx, name)
	if err != nil {
		return nil, err
	}
	return parseTenantSettings(name, data)
}

func parseTenantSettings(name string, data []byte) ([]settings.File, error) {
	if len(data) == 0 {
		return nil, nil
	}
	f, err := settings.Parse(data, "the managed settings of tenant "+name, settings.Managed)
	if err != nil {
		return nil, err
	}
	return []settings.File{f}, nil
}

// legStart is what a leg reads as it starts: its tenant's managed settings, policy (the
// stored JSON; empty when none) and daily token budget (0 when none), and the task's
// last stored event, which the leg's own events follow.
type legStart struct {
	settings []settings.File
	policy   string
	perDay   int64
	lastSeq  int64
}

// qLegStart reads a leg's start in one statement, where four were four round trips on
// Postgres. Each is read as it was on its own: a missing row is NULL. Nothing writes the
// task's events between this read and the leg's first event but the leg itself (another
// attempt of the task stops at the session's lease before it emits any).
const qLegStart = `SELECT
	(SELECT data FROM sema_serve_tenant_settings WHERE tenant = ?),
	(SELECT policy FROM sema_serve_policies WHERE tenant = ?),
	(SELECT tokens_per_day FROM sema_serve_tenants WHERE name = ?),
	(SELECT COALESCE(MAX(seq), 0) FROM sema_serve_events WHERE task_id = ?)`

// readLegStart reads what task t's leg starts with. A store failure is returned as it is
// (the leg is tried again); settings that no longer parse are their settings code.
func (s *Server) readLegStart(ctx context.Context, t *taskRow) (*legStart, error) {
	var data, policy sql.NullString
	var perDay, lastSeq sql.NullInt64
	if err := queryRow(ctx, s.b.db(), qLegStart, []any{t.tenant, t.tenant, t.tenant, t.id}, &data, &policy, &perDay, &lastSeq); err != nil {
		return nil, err
	}
	files, err := parseTenantSettings(t.tenant, []byte(data.String))
	if err != nil {
		return nil, err
	}
	return &legStart{settings: files, policy: policy.String, perDay: perDay.Int64, lastSeq: lastSeq.Int64}, nil
}
