//go:build linux

package env

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// A temporary file names the process that writes it (writerTag), so that one left by a
// process that died mid-write can be removed at once, while one a live process is still
// writing is kept however old it is (a writer stopped with SIGSTOP, or a laptop asleep,
// may resume and rename it into place).

// writerTag is this process in the form tempName puts into a name: its pid, its start
// time (in clock ticks since boot: with the pid, it names one process, as a recycled pid
// starts later) and the inode of its pid namespace (pids mean something only in their
// own), each in base 36, joined by dots. "" when /proc cannot tell.
var writerTag = sync.OnceValue(func() string {
	start, ok := startTime(os.Getpid())
	ns, nsOK := pidNamespaceInode()
	if !ok || !nsOK {
		return ""
	}
	return strconv.FormatInt(int64(os.Getpid()), 36) + "." + strconv.FormatUint(start, 36) + "." + strconv.FormatUint(ns, 36)
})

// judgeWriter reports whether the writer a tag names is provably dead — the tag names
// this pid namespace, and its pid is free or held by a process that started at another
// time — or provably alive: the same process is running. A writer in another namespace,
// or one /proc cannot tell about, is neither.
func judgeWriter(pid36, start36, ns36 string) (dead, alive bool) {
	pid, err1 := strconv.ParseInt(pid36, 36, 32)
	start, err2 := strconv.ParseUint(start36, 36, 64)
	ns, err3 := strconv.ParseUint(ns36, 36, 64)
	if err1 != nil || err2 != nil || err3 != nil || pid <= 0 {
		return false, false
	}
	if mine, ok := pidNamespaceInode(); !ok || mine != ns {
		return false, false
	}
	now, ok := startTime(int(pid))
	if !ok {
		// No such process: ESRCH is proof; anything else (no /proc) is not.
		return errors.Is(syscall.Kill(int(pid), 0), syscall.ESRCH), false
	}
	return now != start, now == start
}

// startTime is the start time of process pid, field 22 of /proc/<pid>/stat.
func startTime(pid int) (uint64, bool) {
	st, err := ReadProcStat(strconv.Itoa(pid))
	return st.StartTime, err == nil
}

// pidNamespaceInode is the inode of this process's pid namespace.
func pidNamespaceInode() (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}
