package files

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
)

// guarded is the outcome of a hook call the lane does not trust: its value and error,
// or the panic it raised.
type guarded[T any] struct {
	v        T
	err      error
	panicked bool
	panicVal any
}

// failure describes why a guarded call did not answer usably, or "" when it did.
func (g guarded[T]) failure() string {
	switch {
	case g.panicked:
		return fmt.Sprintf("panicked: %v", g.panicVal)
	case g.err != nil:
		return "returned an error: " + g.err.Error()
	}
	return ""
}

func callRecovered[T any](ctx context.Context, fn func(context.Context) (T, error)) (g guarded[T]) {
	defer func() {
		if r := recover(); r != nil {
			g = guarded[T]{panicked: true, panicVal: r}
		}
	}()
	v, err := fn(ctx)
	return guarded[T]{v: v, err: err}
}

// callHook runs fn with its panics recovered, and stops waiting for it when ctx ends.
// abandoned reports that ctx ended first; late then delivers the hook's eventual outcome
// (the hook goroutine is not killed: Go cannot, and a hook must honour its ctx). When
// ctx cannot end, fn runs on the caller's goroutine.
func callHook[T any](ctx context.Context, fn func(context.Context) (T, error)) (g guarded[T], abandoned bool, late <-chan guarded[T]) {
	if ctx.Done() == nil {
		return callRecovered(ctx, fn), false, nil
	}
	ch := make(chan guarded[T], 1)
	go func() { ch <- callRecovered(ctx, fn) }()
	select {
	case g = <-ch:
		return g, false, nil
	case <-ctx.Done():
		// An answer that arrived together with the cancellation still counts.
		select {
		case g = <-ch:
			return g, false, nil
		default:
			return g, true, ch
		}
	}
}

// provenErrnos are the write errors whose contract guarantees nothing was written: the
// kernel refused before a byte moved (permissions, a read-only mount, a missing parent
// directory, an exclusive create that lost, a directory in the way, or the O_NOFOLLOW
// refusal of a symlink swapped in at the final component).
var provenErrnos = map[syscall.Errno]bool{
	syscall.EACCES: true,
	syscall.EPERM:  true,
	syscall.EROFS:  true,
	syscall.ENOENT: true,
	syscall.EEXIST: true,
	syscall.EISDIR: true,
	syscall.ELOOP:  true,
}

// proofOf classifies a failed write: ProofProven only for an errno in provenErrnos;
// anything else (ENOSPC, EIO, a cancelled ctx, a panic, an error without an errno) may
// have changed the file and is ProofVerify.
func proofOf(err error) Proof {
	var errno syscall.Errno
	if errors.As(err, &errno) && provenErrnos[errno] {
		return ProofProven
	}
	return ProofVerify
}

var errnoNames = map[syscall.Errno]string{
	syscall.EACCES: "EACCES", syscall.EPERM: "EPERM", syscall.EROFS: "EROFS",
	syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST", syscall.EISDIR: "EISDIR",
	syscall.ELOOP: "ELOOP", syscall.ENOSPC: "ENOSPC", syscall.EIO: "EIO",
	syscall.EDQUOT: "EDQUOT", syscall.ENOTDIR: "ENOTDIR", syscall.EBUSY: "EBUSY",
	syscall.ETXTBSY: "ETXTBSY", syscall.EFBIG: "EFBIG", syscall.EINTR: "EINTR",
	syscall.EAGAIN: "EAGAIN", syscall.EXDEV: "EXDEV", syscall.ENAMETOOLONG: "ENAMETOOLONG",
	syscall.EMLINK: "EMLINK", syscall.ENOTEMPTY: "ENOTEMPTY", syscall.EINVAL: "EINVAL",
}

// errnoName names the errno in err's chain ("ENOSPC"), or "" when there is none.
func errnoName(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return ""
	}
	if n, ok := errnoNames[errno]; ok {
		return n
	}
	return "errno " + strconv.Itoa(int(errno))
}
