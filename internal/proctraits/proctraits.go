//go:build linux

// Package proctraits records what a process inherits to its children that another
// process of the same user can change from outside — resource limits (prlimit), the
// nice value (setpriority), the CPU affinity — so that a process that starts one
// program after another (a sandbox helper or a process reaper that stays for the next
// command) can tell that a program it ran changed it, and stop rather than hand the
// change to the next.
package proctraits

import (
	"slices"

	"golang.org/x/sys/unix"
)

// limits are the resource limits recorded: every one the kernel has.
var limits = []int{
	unix.RLIMIT_AS, unix.RLIMIT_CORE, unix.RLIMIT_CPU, unix.RLIMIT_DATA, unix.RLIMIT_FSIZE,
	unix.RLIMIT_LOCKS, unix.RLIMIT_MEMLOCK, unix.RLIMIT_MSGQUEUE, unix.RLIMIT_NICE,
	unix.RLIMIT_NOFILE, unix.RLIMIT_NPROC, unix.RLIMIT_RSS, unix.RLIMIT_RTPRIO,
	unix.RLIMIT_RTTIME, unix.RLIMIT_SIGPENDING, unix.RLIMIT_STACK,
}

// Traits are a process's inheritable traits at one moment.
type Traits struct {
	limits   []unix.Rlimit
	nice     int
	affinity unix.CPUSet
}

// Now records this process's traits.
func Now() Traits {
	t := Traits{limits: make([]unix.Rlimit, len(limits))}
	for i, r := range limits {
		unix.Getrlimit(r, &t.limits[i])
	}
	t.nice, _ = unix.Getpriority(unix.PRIO_PROCESS, 0)
	unix.SchedGetaffinity(0, &t.affinity)
	return t
}

// Same reports whether this process's traits are still t.
func (t Traits) Same() bool {
	now := Now()
	return slices.Equal(t.limits, now.limits) && t.nice == now.nice && t.affinity == now.affinity
}
