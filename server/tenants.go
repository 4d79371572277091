package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"github.com/riverqueue/river"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/fence"
)

// tenant is who a request acts for: its base directory bounds every root of its tasks,
// and it sees only its own tasks, sessions and checkpoints.
type tenant struct {
	// tokenID names the token the request came with (tokenID), for the logs.
	tokenID       string
	name          string
	base          string // canonical
	maxConcurrent int
	tokensPerDay  int64
	// queue is the River queue of its tasks: the workers that declare it run them.
	queue string
	// policy is the tenant's stored policy ("" when none), read with the tenant when
	// policyRead, so that a request that checks it needs no round trip of its own (see
	// Server.tenantPolicy); a tenant built without it reads it from the store.
	policy     string
	policyRead bool
}

// qTenantPolicy is the column a tenant's query adds to read its policy with it.
const qTenantPolicy = `(SELECT policy FROM sema_serve_policies WHERE tenant = t.name)`

// TenantConfig is a tenant's limits (zero: none) and where its tasks run.
type TenantConfig struct {
	// MaxConcurrent bounds the tenant's tasks queued or running at once.
	MaxConcurrent int
	// TokensPerDay bounds the model tokens the tenant's tasks may spend in 24 hours.
	TokensPerDay int64
	// Queue is the River queue the tenant's tasks are enqueued on; only the workers
	// that declare it (Config.Queues, sema serve --queues) run them — the workers of the
	// machines where the tenant's base directory exists. Empty: "default".
	Queue string
}

// tokenPrefix starts every token, so that one found in a log or a repository is
// recognisable for what it is.
const tokenPrefix = "sema_"

// CreateToken creates (or updates) tenant name with base directory base and limits,
// and returns a new bearer token for it. Only the token's sha256 is stored: the token
// is shown once. The base must be an existing directory; it is kept canonical (symlinks
// resolved), as every task root is compared with it.
func (s *Server) CreateToken(ctx context.Context, name, base string, limits TenantConfig) (string, error) {
	if !validTenantName(name) {
		return "", sema.Errorf(CodeTenantInvalid, "tenant name %q must be 1-64 letters, digits, '-', '_' or '.'", name)
	}
	if !filepath.IsAbs(base) {
		return "", sema.Errorf(CodeTenantInvalid, "the base directory %q must be absolute", base)
	}
	canon, ok, err := fence.Canonicalize(ctx, env.NewHost(), base)
	if err != nil || !ok {
		return "", sema.Errorf(CodeTenantInvalid, "the base directory %s does not resolve to an existing directory", base)
	}
	if limits.MaxConcurrent < 0 || limits.TokensPerDay < 0 {
		return "", sema.Errorf(CodeTenantInvalid, "tenant limits cannot be negative")
	}
	if limits.Queue == "" {
		limits.Queue = river.QueueDefault
	}
	if !validQueue(limits.Queue) {
		return "", sema.Errorf(CodeTenantInvalid, "queue name %q must be 1-128 letters, digits, '-' or '_'", limits.Queue)
	}
	var raw [32]byte
	rand.Read(raw[:])
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	now := nowMS()
	err = s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		n, err := c.exec(ctx, `UPDATE sema_serve_tenants SET base = ?, max_concurrent = ?, tokens_per_day = ?, queue = ?, deleted_ms = NULL WHERE name = ?`,
			canon, limits.MaxConcurrent, limits.TokensPerDay, limits.Queue, name)
		if err != nil {
			return err
		}
		if n == 0 {
			if _, err := c.exec(ctx, `INSERT INTO sema_serve_tenants (name, base, max_concurrent, tokens_per_day, queue, created_ms) VALUES (?, ?, ?, ?, ?, ?)`,
				name, canon, limits.MaxConcurrent, limits.TokensPerDay, limits.Queue, now); err != nil {
				return err
			}
		}
		_, err = c.exec(ctx, `INSERT INTO sema_serve_tokens (hash, tenant, created_ms) VALUES (?, ?, ?)`, tokenHash(token), name, now)
		return err
	})
	if err != nil {
		return "", sema.Errorf(CodeStoreFailed, "cannot store the token: %w", err)
	}
	return token, nil
}

// DeleteTenant deletes tenant name: its tokens stop working at once. Its tasks,
// sessions and files are kept.
func (s *Server) DeleteTenant(ctx context.Context, name string) error {
	return s.b.tx(ctx, func(c conn, _ enqueueFunc) error {
		n, err := c.exec(ctx, `UPDATE sema_serve_tenants SET deleted_ms = ? WHERE name = ? AND deleted_ms IS NULL`, nowMS(), name)
		if err != nil {
			return err
		}
		if n == 0 {
			return sema.Errorf(CodeTenantInvalid, "there is no tenant %q", name)
		}
		_, err = c.exec(ctx, `DELETE FROM sema_serve_tokens WHERE tenant = ?`, name)
		return err
	})
}

// validQueue reports whether name is a River queue name sema accepts.
func validQueue(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func validTenantName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// authenticate finds the tenant of a bearer token. Every failure is the same answer, so
// that a caller learns nothing of which tokens or tenants exist.
func (s *Server) authenticate(ctx context.Context, header string) (*tenant, error) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || !strings.HasPrefix(token, tokenPrefix) {
		return nil, errUnauthorized
	}
	var t tenant
	var policy sql.NullString
	hash := tokenHash(token)
	err := queryRow(ctx, s.b.db(), `SELECT t.name, t.base, t.max_concurrent, t.tokens_per_day, t.queue, `+qTenantPolicy+`
		FROM sema_serve_tokens k JOIN sema_serve_tenants t ON t.name = k.tenant
		WHERE k.hash = ? AND t.deleted_ms IS NULL`, []any{hash}, &t.name, &t.base, &t.maxConcurrent, &t.tokensPerDay, &t.queue, &policy)
	if errors.Is(err, errNoRow) {
		return nil, errUnauthorized
	}
	if err != nil {
		return nil, err
	}
	t.tokenID = tokenID(hash)
	t.policy, t.policyRead = policy.String, true
	return &t, nil
}

// tokenID names a token in logs: the first 12 hex digits of the hash the store keeps, so
// an operator can tell which credential approved a call without the log holding it.
func tokenID(hash string) string { return hash[:min(12, len(hash))] }

var errUnauthorized = sema.Errorf(CodeUnauthorized, "a valid bearer token is required: send Authorization: Bearer sema_… (create one with sema serve token create)")

// inside resolves dir through the fence's canonicalisation (symlinks followed, .. taken
// after them) and reports whether the result is the tenant's base or below it. A
// directory that does not resolve is outside: nothing about it is guessed.
func (t *tenant) inside(ctx context.Context, dir string) (string, bool) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(t.base, dir)
	}
	canon, ok, err := fence.Canonicalize(ctx, env.NewHost(), dir)
	if err != nil || !ok {
		return "", false
	}
	rel, err := filepath.Rel(t.base, canon)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return canon, true
}
