package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/session"
)

// DefaultSessionLease is how long a leg's claim on its session lasts when Deps.SessionLease
// is zero. The leg renews it every third of that while it runs, so only a leg that died
// (or stalled for the whole ttl) lets another take the session over.
const DefaultSessionLease = 30 * time.Second

// leaseHolder names a claim: the host and process say who holds a busy session, the
// random part tells two legs of one process apart. Where the process's identity can be
// read (Linux), the holder also records when the process started and its pid
// namespace, so that a holder whose process died is known at once on its own machine
// (holderGone) instead of blocking the session until its lease expires.
func leaseHolder() string {
	host, _ := os.Hostname()
	h := fmt.Sprintf("pid %d on %s, leg %s", os.Getpid(), host, newSessionID()[:8])
	if self, ok := selfProcess(); ok {
		h += fmt.Sprintf(" (start %d, pidns %s, boot %s)", self.start, self.pidns, self.boot)
	}
	return h
}

// holderRE reads a holder leaseHolder wrote with the process's identity.
var holderRE = regexp.MustCompile(`^pid ([0-9]+) on (.+), leg [0-9a-f]+ \(start ([0-9]+), pidns ([0-9]+), boot ([0-9a-f]+)\)$`)

// process identifies a process on a machine: its pid means that process only in its
// pid namespace and boot of the machine (two machines may share a host name, and the
// first pid namespace's number is the same on all), and only while the kernel's record
// of its start (clock ticks since boot) is the same — a pid freed by a dead process is
// reused by another.
type process struct {
	host  string
	pid   int
	start uint64
	pidns string
	boot  string // the start of the kernel's boot id
}

// procState is what a look at a pid found: no process, a zombie (dead, not reaped), or
// a live one with its start time; unknown when it cannot be told (another user's
// process under a hidden /proc).
type procState int

const (
	procUnknown procState = iota
	procNone
	procZombie
	procLive
)

// holderGone reports whether a lease's holder is certainly dead: a process of this
// machine (self's host, boot and pid namespace) whose pid now names no process, a zombie, or
// another process (a different start). A holder of another machine or namespace, one
// written without the identity, or one whose process cannot be looked at, is never
// judged dead: its lease runs out as before. probe looks at a pid (probeProcess).
func holderGone(holder string, self process, probe func(pid int) (procState, uint64)) bool {
	m := holderRE.FindStringSubmatch(holder)
	if m == nil || self.host == "" || m[2] != self.host || m[4] != self.pidns || m[5] != self.boot {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return false
	}
	start, err := strconv.ParseUint(m[3], 10, 64)
	if err != nil {
		return false
	}
	state, now := probe(pid)
	switch state {
	case procNone, procZombie:
		return true
	case procLive:
		return now != start
	}
	return false
}

// acquireLease makes holder the session's one writer for ttl. A session another live
// holder holds is refused with session.busy, or, with wait, waited for as long as ctx
// lasts. A holder this machine knows is dead (holderGone) is taken over at once: its
// lease is released on its behalf, which frees the session only if that holder still
// holds it, and the session is acquired like any free one (of several that race,
// one wins).
func acquireLease(ctx context.Context, store session.Store, sessionID, holder string, ttl time.Duration, wait bool) error {
	poll := min(ttl/4, 200*time.Millisecond)
	self, _ := selfProcess()
	tried := ""
	for {
		_, err := store.AcquireLease(ctx, sessionID, holder, ttl)
		if err == nil {
			return nil
		}
		if !sema.IsCode(err, session.CodeBusy) {
			return err
		}
		var se *sema.Error
		if errors.As(err, &se) {
			if dead, _ := se.Detail["holder"].(string); dead != tried && holderGone(dead, self, probeProcess) {
				tried = dead
				if err := store.ReleaseLease(ctx, sessionID, dead); err != nil {
					return err
				}
				continue
			}
		}
		if !wait {
			return err
		}
		select {
		case <-ctx.Done():
			// Waiting ended without the session: still busy, and the ctx says why.
			return &sema.Error{Code: session.CodeBusy, Message: "gave up waiting for session " + sessionID + ": " + sema.MessageOf(err), Err: ctx.Err()}
		case <-time.After(poll):
		}
	}
}

// holdLease acquires the session's lease (acquireLease) and renews it every third of
// ttl until it is released; lost is called if a renewal finds another holder took it.
func holdLease(ctx context.Context, store session.Store, sessionID string, ttl time.Duration, wait bool, lost func(error)) (*sessionLease, error) {
	holder := leaseHolder()
	if err := acquireLease(ctx, store, sessionID, holder, ttl, wait); err != nil {
		return nil, err
	}
	s := &sessionLease{store: store, sessionID: sessionID, holder: holder, ttl: ttl, stop: make(chan struct{}), done: make(chan struct{})}
	go s.renew(ctx, ttl, lost)
	return s, nil
}

// sessionLease is a held claim on a session and the goroutine that renews it.
type sessionLease struct {
	store     session.Store
	sessionID string
	holder    string
	ttl       time.Duration
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
}

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
	s, err := holdLease(ctx, l.store, sessionID, leaseTTL(l.deps), l.spec.resume().Wait, func(err error) {
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
	s := l.rootLeg().lease
	if s == nil {
		return nil
	}
	return &session.Claim{SessionID: s.sessionID, Holder: s.holder}
}

// reclaim answers a write the store refused with session.lease_lost. When the lease only
// expired (the leg stalled past its ttl, and nobody took the session meanwhile), it is
// renewed and reclaim returns nil: the write may be tried once more. When another run
// took the session, the leg stops as a lost renewal stops it (its context ends with the
// cause) and reclaim returns the renewal's refusal.
func (l *leg) reclaim(ctx context.Context) error {
	root := l.rootLeg()
	s := root.lease
	if s == nil {
		return session.LeaseLost("", "")
	}
	_, err := s.store.RenewLease(context.WithoutCancel(ctx), s.sessionID, s.holder, s.ttl)
	if sema.IsCode(err, session.CodeLeaseLost) && root.stop != nil {
		root.stop(err)
	}
	return err
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
