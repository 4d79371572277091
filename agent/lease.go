package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// DefaultSessionLease is how long a leg's claim on its session lasts when Deps.SessionLease
// is zero. The leg renews it every third of that while it runs, so only a leg that died
// (or stalled for the whole ttl) lets another take the session over.
const DefaultSessionLease = 30 * time.Second

// leaseHolder names this leg's claim: the host and process say who holds a busy session,
// the random part tells two legs of one process apart.
func leaseHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("pid %d on %s, leg %s", os.Getpid(), host, newSessionID()[:8])
}

// sessionLease is a leg's held claim on its session and the goroutine that renews it.
type sessionLease struct {
	store     session.Store
	sessionID string
	holder    string
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
}

// takeLease makes this leg its session's one writer. A session another live leg holds
// is refused with session.busy, or waited for when the spec says so (Resume.Wait), as
// long as ctx lasts. While the leg runs, the lease is renewed; if it is lost anyway (the
// leg stalled past the ttl and another run took the session), the leg's context ends
// with that cause and the leg stops writing.
//
// A delegated child takes none: its session is continued only through its parent
// (Resume refuses a child's session by name), so the root leg's lease already makes
// the whole chain the session tree's one writer, and a lost root lease ends the child's
// context with the same cause.
func (l *leg) takeLease(ctx context.Context, sessionID string) error {
	if l.link != nil {
		return nil
	}
	ttl := l.deps.SessionLease
	if ttl <= 0 {
		ttl = DefaultSessionLease
	}
	holder := leaseHolder()
	poll := min(ttl/4, 200*time.Millisecond)
	for {
		_, err := l.store.AcquireLease(ctx, sessionID, holder, ttl)
		if err == nil {
			break
		}
		if !sema.IsCode(err, session.CodeBusy) || !l.spec.resume().Wait {
			return err
		}
		select {
		case <-ctx.Done():
			// Waiting ended without the session: still busy, and the ctx says why.
			return &sema.Error{Code: session.CodeBusy, Message: "gave up waiting for session " + sessionID + ": " + sema.MessageOf(err), Err: ctx.Err()}
		case <-time.After(poll):
		}
	}
	s := &sessionLease{store: l.store, sessionID: sessionID, holder: holder, stop: make(chan struct{}), done: make(chan struct{})}
	stop := l.stop
	go s.renew(ctx, ttl, func(err error) {
		if stop != nil {
			stop(err)
		}
	})
	l.lease = s
	return nil
}

// renew keeps the lease alive every third of its ttl until release. A failed renewal
// other than a lost lease is retried at the next tick: the lease outlives two misses.
func (s *sessionLease) renew(ctx context.Context, ttl time.Duration, lost func(error)) {
	defer close(s.done)
	ctx = context.WithoutCancel(ctx)
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.store.RenewLease(ctx, s.sessionID, s.holder, ttl); sema.IsCode(err, session.CodeLeaseLost) {
				lost(err)
				return
			}
		}
	}
}

// release stops the renewal and frees the session for the next leg. It is safe to call
// more than once.
func (s *sessionLease) release(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		err = s.store.ReleaseLease(context.WithoutCancel(ctx), s.sessionID, s.holder)
	})
	return err
}

// dropLease releases the leg's lease, if it holds one. A release that fails leaves the
// session busy until the lease expires; the leg says so in a notice.
func (l *leg) dropLease(ctx context.Context) {
	if l.lease == nil {
		return
	}
	if err := l.lease.release(ctx); err != nil {
		l.notice(sema.Notice{Code: CodeSessionRecordFailed, Message: "the session's lease could not be released; the session stays busy until it expires: " + err.Error()})
	}
}
