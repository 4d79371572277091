//go:build linux

package shell

import (
	"bytes"
	"os"
	"slices"
	"syscall"

	"github.com/sema-agent/sema/env"
)

// pidNamespace names this process's pid namespace: process ids recorded under another
// one say nothing here.
func pidNamespace() string {
	s, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "-"
	}
	return s
}

// killMarkedGroups sends SIGKILL to every group of groups in which a live process has
// mark (NAME=value) in its environment. A group id cannot be reused while a member
// exists, so such a member proves the group is the one recorded.
func killMarkedGroups(groups []int, mark string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	want := []byte(mark)
	hit := map[int]bool{}
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		st, err := env.ReadProcStat(name)
		if err != nil || st.Gone() || hit[st.PGRP] || !slices.Contains(groups, st.PGRP) {
			continue
		}
		pgrp := st.PGRP
		environ, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil {
			continue
		}
		for v := range bytes.SplitSeq(environ, []byte{0}) {
			if bytes.Equal(v, want) {
				hit[pgrp] = true
				break
			}
		}
	}
	for pgid := range hit {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return true
}
