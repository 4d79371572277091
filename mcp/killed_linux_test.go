//go:build linux

package mcp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holderEnv makes TestKilledHolderLeavesNoServerChild's own run of the test binary the
// process that mounts the server (see holdServer).
const holderEnv = "SEMA_MCP_TEST_HOLDER"

// holdServer mounts a stdio server that starts a child in its group, prints the server's
// pid and the child's on one line, and waits to be killed.
func holdServer(t *testing.T) {
	m, err := Start(context.Background(), []Server{stdioServer(t, "x", "spawn-child")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("pids %d %d\n", pidOf(t, m, "mcp__x__pid"), pidOf(t, m, "mcp__x__child_pid"))
	time.Sleep(time.Minute)
}

// A process that mounted a stdio server and is killed with SIGKILL leaves neither the
// server nor the child the server started in its group: the server dies of its
// parent-death signal, the child through the guardian, which lists the server's group.
// Before the group was listed, the child lived on (every trial). SEMA_SOAK=N runs N
// trials and logs how many left a process.
func TestKilledHolderLeavesNoServerChild(t *testing.T) {
	if os.Getenv(holderEnv) != "" {
		holdServer(t)
		return
	}
	trials := 2
	if n, err := strconv.Atoi(os.Getenv("SEMA_SOAK")); err == nil && n > 0 {
		trials = n
	}
	left := 0
	for range trials {
		server, child := killedHolder(t)
		deadline := time.Now().Add(5 * time.Second)
		for (alive(server) || alive(child)) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(server) || alive(child) {
			left++
			t.Errorf("after SIGKILL of the process that mounted it: server %d alive %v, its child %d alive %v", server, alive(server), child, alive(child))
		}
		syscall.Kill(server, syscall.SIGKILL)
		syscall.Kill(child, syscall.SIGKILL)
	}
	t.Logf("%d of %d trials left a process behind", left, trials)
}

// killedHolder runs the test binary as a holder, reads the pids it prints and kills it
// with SIGKILL.
func killedHolder(t *testing.T) (server, child int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestKilledHolderLeavesNoServerChild$")
	cmd.Env = append(os.Environ(), holderEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "pids ") {
				line <- sc.Text()
				return
			}
		}
		close(line)
	}()
	var l string
	select {
	case l = <-line:
	case <-time.After(30 * time.Second):
	}
	if _, err := fmt.Sscanf(l, "pids %d %d", &server, &child); err != nil || !alive(server) || !alive(child) {
		t.Fatalf("the holder did not start its server and the server's child (%q, %v)", l, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	return server, child
}
