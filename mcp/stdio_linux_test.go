package mcp

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive reports whether the process pid exists and is not a zombie (a zombie has ended;
// only its parent, which may be init in a container that never reaps, still holds it).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// pidOf calls a tool answering a pid.
func pidOf(t *testing.T, m *Mount, tool string) int {
	t.Helper()
	r := call(t, m, tool, `{}`)
	pid, err := strconv.Atoi(r.TextOf())
	if err != nil || pid <= 0 {
		t.Fatalf("%s answered %+v", tool, r)
	}
	return pid
}

// Close leaves nothing of a stdio server's process group: neither the server nor a
// child it started, whether the server exits when its stdin closes or has to be
// killed.
func TestCloseKillsProcessGroup(t *testing.T) {
	t.Parallel()
	cases := []struct {
		flags   string
		atLeast time.Duration // how long Close must take: the grace periods it waited
	}{
		{flags: "spawn-child"},
		{flags: "spawn-child,stubborn", atLeast: 2 * closeGrace},
	}
	for _, c := range cases {
		t.Run(c.flags, func(t *testing.T) {
			t.Parallel()
			m, err := Start(context.Background(), []Server{stdioServer(t, "x", c.flags)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			server, child := pidOf(t, m, "mcp__x__pid"), pidOf(t, m, "mcp__x__child_pid")
			if !alive(server) || !alive(child) {
				t.Fatal("the server or its child is not running")
			}
			began := time.Now()
			m.Close()
			took := time.Since(began)
			if alive(server) || alive(child) {
				t.Fatalf("after Close: server alive %v, child alive %v", alive(server), alive(child))
			}
			if took < c.atLeast || took > c.atLeast+closeGrace {
				t.Fatalf("Close took %v, want about %v", took, c.atLeast)
			}
		})
	}
}

// A server that crashes leaves no child behind either: its group is killed as soon as
// it exits.
func TestCrashKillsProcessGroup(t *testing.T) {
	t.Parallel()
	m, log := mount(t, []Server{stdioServer(t, "x", "spawn-child")}, Options{})
	child := pidOf(t, m, "mcp__x__child_pid")
	call(t, m, "mcp__x__crash", `{}`)
	log.await(t, CodeServerFailed)
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(child) {
		t.Fatal("the crashed server's child is still running")
	}
}
