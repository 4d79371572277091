package files

import (
	"context"
	"strings"
	"sync"

	"github.com/sema-agent/sema/env"
)

// laneLocks serializes the read-check-write sequence of each file across every lane of
// the process: two sessions (two ReadStates) editing one file through one fence never
// interleave, and the second one finds the file changed instead of clobbering it. It is
// process-wide on purpose — sessions of one process are exactly the writers that would
// otherwise race — and keyed by the env's identity and the canonical path, so two trees
// that happen to share a spelling do not wait on each other.
var laneLocks = &keyedLocks{m: map[lockID]*keyedLock{}}

type keyedLocks struct {
	mu sync.Mutex
	m  map[lockID]*keyedLock
}

// lockID names one file: the env's identity and the canonical path (folded to lower
// case on a case-insensitive filesystem, where two spellings are one file).
type lockID struct{ tree, path string }

// keyedLock is a mutex whose acquisition can be abandoned: the channel holds one token
// while the lock is free.
type keyedLock struct {
	token chan struct{}
	refs  int // holders and waiters; the entry is dropped at zero
}

// lockKey is the key a canonical path locks under in e.
func lockKey(e env.ExecutionEnv, canonical string) lockID {
	if e.CaseInsensitive() {
		canonical = strings.ToLower(canonical)
	}
	return lockID{e.Identity(), canonical}
}

// lock acquires key, or gives up with ctx's error. The returned unlock must be called
// exactly once.
func (k *keyedLocks) lock(ctx context.Context, key lockID) (unlock func(), err error) {
	k.mu.Lock()
	l := k.m[key]
	if l == nil {
		l = &keyedLock{token: make(chan struct{}, 1)}
		l.token <- struct{}{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()

	select {
	case <-l.token:
		return func() { l.token <- struct{}{}; k.release(key, l) }, nil
	case <-ctx.Done():
		k.release(key, l)
		return nil, ctx.Err()
	}
}

func (k *keyedLocks) release(key lockID, l *keyedLock) {
	k.mu.Lock()
	l.refs--
	if l.refs == 0 {
		delete(k.m, key)
	}
	k.mu.Unlock()
}
