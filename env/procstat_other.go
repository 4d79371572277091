//go:build !linux

package env

import "errors"

// ProcStat is what sema reads of a process's /proc/PID/stat (Linux only).
type ProcStat struct {
	State      byte   // the one-letter state
	PPID, PGRP int    // the parent's pid and the process group
	StartTime  uint64 // clock ticks after boot
}

// Gone reports a process that has exited.
func (s ProcStat) Gone() bool { return s.State == 'Z' || s.State == 'X' }

var errProcStat = errors.New("env: no /proc here")

// ReadProcStat has no /proc to read here.
func ReadProcStat(string) (ProcStat, error) { return ProcStat{}, errProcStat }
