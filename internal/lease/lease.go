// Package lease makes a leg its session's one writer: it names the holder of a claim
// (the process and the leg), acquires the store's lease for it — taking over at once a
// lease whose holder this machine knows is dead — and renews it while the leg runs.
package lease

import (
	"context"
	"crypto/rand"
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

// Holder names a claim: the host and process say who holds a busy session, the
// random part tells two legs of one process apart. Where the process's identity can be
// read (Linux), the holder also records when the process started and its pid
// namespace, so that a holder whose process died is known at once on its own machine
// (holderGone) instead of blocking the session until its lease expires.
func Holder() string {
	host, _ := os.Hostname()
	var leg [4]byte
	rand.Read(leg[:]) // crypto/rand.Read never fails (it panics instead)
	h := fmt.Sprintf("pid %d on %s, leg %x", os.Getpid(), host, leg)
	if self, ok := selfProcess(); ok {
		h += fmt.Sprintf(" (start %d, pidns %s, boot %s)", self.start, self.pidns, self.boot)
	}
	return h
}

// holderRE reads a holder Holder wrote with the process's identity. It is compiled when
// first needed (a busy session): not at every process's start.
var holderRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^pid ([0-9]+) on (.+), leg [0-9a-f]+ \(start ([0-9]+), pidns ([0-9]+), boot ([0-9a-f]+)\)$`)
})

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
	m := holderRE().FindStringSubmatch(holder)
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

// Acquire makes holder the session's one writer for ttl. A session another live
// holder holds is refused with session.busy, or, with wait, waited for as long as ctx
// lasts. A holder this machine knows is dead (holderGone) is taken over at once: its
// lease is released on its behalf, which frees the session only if that holder still
// holds it, and the session is acquired like any free one (of several that race,
// one wins).
func Acquire(ctx context.Context, store session.Store, sessionID, holder string, ttl time.Duration, wait bool) error {
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

// Hold acquires the session's lease for a new holder (Acquire) and renews it every
// third of ttl until it is released; lost is called if a renewal finds another holder
// took it.
func Hold(ctx context.Context, store session.Store, sessionID string, ttl time.Duration, wait bool, lost func(error)) (*Held, error) {
	holder := Holder()
	if err := Acquire(ctx, store, sessionID, holder, ttl, wait); err != nil {
		return nil, err
	}
	return Adopt(ctx, store, sessionID, holder, ttl, lost), nil
}

// Adopt renews, as Hold does, a lease holder was granted another way: with the session a
// store created for it (session.Opener). holder comes from Holder.
func Adopt(ctx context.Context, store session.Store, sessionID, holder string, ttl time.Duration, lost func(error)) *Held {
	s := &Held{store: store, sessionID: sessionID, holder: holder, ttl: ttl, stop: make(chan struct{}), done: make(chan struct{})}
	go s.renew(ctx, ttl, lost)
	return s
}

// Held is a held claim on a session and the goroutine that renews it.
type Held struct {
	store     session.Store
	sessionID string
	holder    string
	ttl       time.Duration
	stop      chan struct{}
	done      chan struct{}
	once      sync.Once
}

// Claim is what a write under this lease is conditional on (see session.Claim).
func (s *Held) Claim() *session.Claim {
	return &session.Claim{SessionID: s.sessionID, Holder: s.holder}
}

// Renew renews the lease once, now, even after ctx ended: a write the store refused
// because the lease expired may be tried again once it is renewed. The store's
// session.lease_lost says another holder took the session meanwhile.
func (s *Held) Renew(ctx context.Context) error {
	_, err := s.store.RenewLease(context.WithoutCancel(ctx), s.sessionID, s.holder, s.ttl)
	return err
}

// renew keeps the lease alive every third of its ttl until release. A failed renewal
// other than a lost lease is retried at the next tick: the lease outlives two misses.
func (s *Held) renew(ctx context.Context, ttl time.Duration, lost func(error)) {
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

// Release stops the renewal and frees the session for the next leg. It is safe to call
// more than once.
func (s *Held) Release(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		err = s.store.ReleaseLease(context.WithoutCancel(ctx), s.sessionID, s.holder)
	})
	return err
}
