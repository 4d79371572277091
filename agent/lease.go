package agent

import (
	"context"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/internal/lease"
	"github.com/sema-agent/sema/session"
)

// DefaultSessionLease is how long a leg's claim on its session lasts when Deps.SessionLease
// is zero. The leg renews it every third of that while it runs, so only a leg that died
// (or stalled for the whole ttl) lets another take the session over.
const DefaultSessionLease = 30 * time.Second

// leaseTTL is the length of a claim under deps: Deps.SessionLease, else the default.
func leaseTTL(deps *Deps) time.Duration {
	if deps.SessionLease > 0 {
		return deps.SessionLease
	}
	return DefaultSessionLease
}

// takeLease makes this leg its session's one writer. A session another live leg holds
// is refused with session.busy, or waited for when the spec says so (Resume.Wait), as
// long as ctx lasts. While the leg runs, the lease is renewed; if it is lost anyway (the
// leg stalled past the ttl and another run took the session), the leg's context ends
// with that cause and the leg stops writing. Every entry the leg writes carries the
// lease as its claim (writeClaim), so the store refuses it once the lease is not live.
//
// A delegated child takes none: its session is continued only through its parent
// (Resume refuses a child's session by name), so the root leg's lease already makes
// the whole chain the session tree's one writer, and a lost root lease ends the child's
// context with the same cause.
func (l *leg) takeLease(ctx context.Context, sessionID string) error {
	if l.link != nil {
		return nil
	}
	stop := l.stop
	s, err := lease.Hold(ctx, l.store, sessionID, leaseTTL(l.deps), l.spec.resume().Wait, func(err error) {
		if stop != nil {
			stop(err)
		}
	})
	if err != nil {
		return err
	}
	l.lease = s
	return nil
}

// createLeased stores the new session s with this leg's lease on it and the session's
// first leg: in one transaction when the store can (session.Opener), else as Create,
// takeLease and StartLeg, in that order.
func (l *leg) createLeased(ctx context.Context, s session.Session) (session.Session, session.Leg, error) {
	o, ok := l.store.(session.Opener)
	if !ok || l.link != nil {
		created, err := l.store.Create(ctx, s)
		if err != nil {
			return created, session.Leg{}, err
		}
		if err := l.takeLease(ctx, created.ID); err != nil {
			return created, session.Leg{}, err
		}
		leg, err := l.store.StartLeg(ctx, created.ID)
		return created, leg, err
	}
	holder, ttl, stop := lease.Holder(), leaseTTL(l.deps), l.stop
	created, leg, err := o.CreateLeased(ctx, s, holder, ttl)
	if err != nil {
		return created, leg, err
	}
	l.lease = lease.Adopt(ctx, l.store, created.ID, holder, ttl, func(err error) {
		if stop != nil {
			stop(err)
		}
	})
	return created, leg, nil
}

// rootLeg is the leg whose lease l's writes depend on: l itself, or the root leg of
// the chain that delegated it (a child takes no lease of its own, see takeLease).
func (l *leg) rootLeg() *leg {
	for l.link != nil {
		l = l.link.parent
	}
	return l
}

// writeClaim is what every write of l to the session store is conditional on: its root
// leg's lease, live (see session.Claim). Nil when the leg holds none (no store).
func (l *leg) writeClaim() *session.Claim {
	root := l.rootLeg()
	if root.opened() != nil {
		return nil
	}
	s := root.lease
	if s == nil {
		return nil
	}
	return s.Claim()
}

// reclaim answers a write the store refused with session.lease_lost. When the lease only
// expired (the leg stalled past its ttl, and nobody took the session meanwhile), it is
// renewed and reclaim returns nil: the write may be tried once more. When another run
// took the session, the leg stops as a lost renewal stops it (its context ends with the
// cause) and reclaim returns the renewal's refusal.
func (l *leg) reclaim(ctx context.Context) error {
	root := l.rootLeg()
	if err := root.opened(); err != nil {
		return err
	}
	s := root.lease
	if s == nil {
		return session.LeaseLost("", "")
	}
	err := s.Renew(ctx)
	if sema.IsCode(err, session.CodeLeaseLost) && root.stop != nil {
		root.stop(err)
	}
	return err
}

// dropLease releases the leg's lease, if it holds one. A release that fails leaves the
// session busy until the lease expires; the leg says so in a notice.
func (l *leg) dropLease(ctx context.Context) {
	l.opened() // a new session whose leg could not be stored may hold its lease
	if l.lease == nil {
		return
	}
	if err := l.lease.Release(ctx); err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the session's lease could not be released; the session stays busy until it expires: " + err.Error()})
	}
}
