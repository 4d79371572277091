package lease

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
)

// A service that runs legs on several machines rescues the legs of a process that died
// on another machine: it names each of its processes as the lease holders of its legs
// do (Process), so that a rescuer can tell a dead process's leases (HolderProcess)
// and release them on its behalf instead of waiting for them to expire.

// holderLegRE splits a holder Holder wrote into the process before and after its
// leg's random part.
var holderLegRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(pid [0-9]+ on .+), leg [0-9a-f]+((?: \(start [0-9]+, pidns [0-9]+, boot [0-9a-f]+\))?)$`)
})

// Process names this process as the holders of its legs' session leases do, without
// the leg: "pid P on HOST", followed where it can be read by the process's start, pid
// namespace and boot.
func Process() string {
	host, _ := os.Hostname()
	p := fmt.Sprintf("pid %d on %s", os.Getpid(), host)
	if self, ok := selfProcess(); ok {
		p += fmt.Sprintf(" (start %d, pidns %s, boot %s)", self.start, self.pidns, self.boot)
	}
	return p
}

// HolderProcess is the process (as Process names it) that holds a lease with this
// holder; "" for a holder no leg wrote.
func HolderProcess(holder string) string {
	m := holderLegRE().FindStringSubmatch(holder)
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}

// ProcessGone reports whether the process Process named is certainly dead: one of
// this machine (host, boot and pid namespace) whose pid names no process or another
// one. A process of another machine, or named without its start, is never judged dead.
func ProcessGone(name string) bool {
	i := strings.LastIndex(name, " (start ")
	if i < 0 {
		return false
	}
	self, ok := selfProcess()
	if !ok {
		return false
	}
	return holderGone(name[:i]+", leg 0"+name[i:], self, probeProcess)
}
