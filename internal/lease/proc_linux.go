package lease

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sema-agent/sema/env"
)

// selfProcess is this process's identity (see process); ok is false when /proc cannot
// tell it, and holders then carry none.
var selfProcess = sync.OnceValues(func() (process, bool) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return process{}, false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return process{}, false
	}
	// "pid:[4026531836]": the namespace's inode number.
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	if _, err := strconv.ParseUint(ns, 10, 64); err != nil {
		return process{}, false
	}
	// The boot id tells this machine's boot from any other's; its first group suffices.
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	boot, _, _ := strings.Cut(strings.TrimSpace(string(b)), "-")
	if err != nil || len(boot) != 8 {
		return process{}, false
	}
	state, start := probeProcess(os.Getpid())
	if state != procLive {
		return process{}, false
	}
	return process{host: host, pid: os.Getpid(), start: start, pidns: ns, boot: boot}, true
})

// probeProcess looks at pid through /proc: its state and, for a live process, its start
// time (field 22 of /proc/PID/stat, clock ticks since boot). A pid /proc does not show
// is asked about with signal 0, so that a live process /proc hides (hidepid) is not
// taken for a dead one.
func probeProcess(pid int) (procState, uint64) {
	st, err := env.ReadProcStat(strconv.Itoa(pid))
	switch {
	case err != nil && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH):
		return procNone, 0
	case err != nil:
		return procUnknown, 0
	case st.Gone():
		return procZombie, 0
	}
	return procLive, st.StartTime
}
