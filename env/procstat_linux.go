package env

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// ProcStat is what sema reads of a process's /proc/PID/stat.
type ProcStat struct {
	// State is the one-letter state: R, S, D, T, Z (a zombie), X (dead), …
	State byte
	// PPID and PGRP are the parent's pid and the process group.
	PPID, PGRP int
	// StartTime is when the process started, in clock ticks after boot: with the pid,
	// the identity of one process (a pid is reused, a pid and its start time are not).
	StartTime uint64
}

// Gone reports a process that has exited (a zombie waiting for its parent, or dead).
func (s ProcStat) Gone() bool { return s.State == 'Z' || s.State == 'X' }

// errProcStat is a /proc/PID/stat that does not read as the kernel writes it.
var errProcStat = errors.New("env: unreadable /proc/PID/stat")

// ReadProcStat reads /proc/PID/stat of pid (a decimal string, as /proc's names are).
// The command name, field 2, is in parentheses and may hold anything, spaces and
// parentheses included; the fields after its last ')' are plain.
func ReadProcStat(pid string) (ProcStat, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ProcStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, errProcStat
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state
	if len(f) < 20 || len(f[0]) != 1 {
		return ProcStat{}, errProcStat
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ProcStat{}, errProcStat
	}
	return ProcStat{State: f[0][0], PPID: ppid, PGRP: pgrp, StartTime: start}, nil
}
