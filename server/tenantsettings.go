package server

import (
	"context"
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

// parseTenantSettings parses tenant name's managed settings, data (none when empty).
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
