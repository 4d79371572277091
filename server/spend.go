package server

import (
	"context"
	"time"

	"github.com/sema-agent/sema/model"
)

// The tenants' spend: the tokens their tasks' model responses used, by the hour they
// arrived in (sema_serve_spend). Each response adds its tokens as it arrives, so what a
// leg spent is counted even when the leg never ends in order (its process was killed,
// or stopped mid-leg): the next leg goes on from the transcript, without those turns,
// and the day's budget still holds them. A leg's end adds what its responses did not
// (compaction's and fetches' model calls) from the result's total.

// spendKept is how long spend rows are kept: the day's budget reads the last 24 hours,
// and a day more leaves room for clocks that differ between nodes and for an operator
// looking at yesterday. Older rows are deleted (pruneSpend).
const spendKept = 48 * time.Hour

// spendPruneEvery is how often a working process deletes spend rows older than
// spendKept (and once as it starts).
const spendPruneEvery = time.Hour

// hourOf is the start of the hour holding ms (unix milliseconds).
func hourOf(ms int64) int64 { return ms - ms%time.Hour.Milliseconds() }

// recordSpend adds tokens to tenant's spend of the hour holding now, in one statement
// (concurrent legs of the tenant, on any node, each add theirs).
func recordSpend(ctx context.Context, c conn, tenant string, tokens, now int64) error {
	if tokens <= 0 {
		return nil
	}
	_, err := c.exec(ctx, qRecordSpend, tenant, hourOf(now), tokens)
	return err
}

const qRecordSpend = `INSERT INTO sema_serve_spend (tenant, hour_ms, tokens) VALUES (?, ?, ?)
		ON CONFLICT (tenant, hour_ms) DO UPDATE SET tokens = sema_serve_spend.tokens + excluded.tokens`

// tokensToday is what tenant name's tasks spent in the last 24 hours before now,
// counted by the hour: this hour and the 23 before it.
func tokensToday(ctx context.Context, c conn, name string, now int64) (int64, error) {
	var used int64
	err := queryRow(ctx, c, `SELECT CAST(COALESCE(SUM(tokens), 0) AS BIGINT) FROM sema_serve_spend WHERE tenant = ? AND hour_ms > ?`,
		[]any{name, hourOf(now) - 24*time.Hour.Milliseconds()}, &used)
	return used, err
}

// pruneSpend deletes the spend rows older than spendKept before now; it returns how
// many it deleted.
func (s *Server) pruneSpend(ctx context.Context, now int64) (int64, error) {
	return s.b.db().exec(ctx, `DELETE FROM sema_serve_spend WHERE hour_ms < ?`, hourOf(now-spendKept.Milliseconds()))
}

// usageTokens is every token a usage counts, cached ones included.
func usageTokens(u model.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// legSpend records a running leg's spend as its model responses arrive, and keeps the
// leg inside its tenant's daily token budget (perDay; 0: none) whatever the tenant's
// other legs spend meanwhile, on this node or another: after each response the
// tenant's day is summed, and once it reaches the budget the leg stops. A leg
// overshoots by at most the response that crossed it. Without a budget, a response's
// tokens are held with the leg's events and committed with its next transcript write —
// the call intent or the leg's end after it (heldwrites.go) — so the spend and the
// turn that spent it are kept together, for no commit of their own. With one, they are
// committed at once, before the day is summed: the other legs' sums must see them.
type legSpend struct {
	s      *Server
	task   *taskRow // its recorded counts what the leg's responses added
	perDay int64
	legs   *legStream
}

// add records a response's tokens and reports whether the tenant's day is spent.
func (m *legSpend) add(ctx context.Context, u model.Usage) (bool, error) {
	now := nowMS()
	n := usageTokens(u)
	m.legs.holdSpend(n, now)
	m.task.recorded += n
	if m.perDay <= 0 {
		return false, nil
	}
	if err := m.legs.flush(ctx); err != nil {
		return false, err // held still: the next commit, or the leg's end, records it
	}
	used, err := tokensToday(ctx, m.s.b.db(), m.task.tenant, now)
	return used >= m.perDay, err
}
