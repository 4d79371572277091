package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tinyMCPEnv makes the test binary a stdio MCP server (see serveTinyMCP): its value is a
// mark the server's child carries on its command line.
const tinyMCPEnv = "SEMA_E2E_TINY_MCP"

// serveTinyMCP turns the test binary into the smallest stdio MCP server when tinyMCPEnv
// is set: it first starts two children, the kind of helper a real server starts —
// `sleep <mark>` in its process group and `sleep 1<mark>` in a session of its own —
// then answers initialize and tools/list (no tools) until its input ends. It never
// returns when it serves.
func serveTinyMCP() {
	mark, ok := os.LookupEnv(tinyMCPEnv)
	if !ok {
		return
	}
	inGroup := exec.Command("sleep", mark)
	apart := exec.Command("sleep", "1"+mark)
	apart.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	for _, c := range []*exec.Cmd{inGroup, apart} {
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "tiny mcp:", err)
			os.Exit(3)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			resp["result"] = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "tiny", "version": "1"}}
		case "tools/list":
			resp["result"] = map[string]any{"tools": []any{}}
		default:
			resp["error"] = map[string]any{"code": -32601, "message": "no such method"}
		}
		out.Encode(resp)
	}
	os.Exit(0)
}

// processesWith lists the live processes (not zombies) whose command line holds mark.
func processesWith(mark string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cl), mark) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && len(st) > i+2 && (st[i+2] == 'Z' || st[i+2] == 'X') {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// leftoverTrial is one run of sema with a stdio MCP server that starts two children (one
// of them out of its group) and a Bash
// command that starts a `setsid` job writing into the workspace; sema ends as end says:
// "exit" (the run completes), or by SIGTERM, SIGHUP or SIGKILL while a second command
// runs. It reports what of the two is still alive three seconds after sema ended, and
// whether the job's file still grows then; what it finds alive is killed.
func leftoverTrial(t *testing.T, sandboxMode, end string) (mcpChild, job []int, grows bool) {
	t.Helper()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	uniq := strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 10)
	childMark := "297." + uniq // the MCP server's children: sleep 297.<uniq>, sleep 1297.<uniq>
	jobMark := "leftover" + uniq
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"tiny": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{tinyMCPEnv: childMark}},
	}})
	started := filepath.Join(dir, "started")
	// The command returns once the job runs, so that it has left the group by then.
	jobCmd := `setsid sh -c ': ` + jobMark + `; echo > started; while :; do date >> ticks; sleep 0.1; done' >/dev/null 2>&1 &
i=0; while [ ! -e started ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done`
	turns := []string{`{"tool_calls":[{"name":"Bash","input":{"command":` + jsonString(jobCmd) + `}}]}`}
	if end != "exit" {
		// The run is still in a command when it is ended.
		turns = append(turns, `{"tool_calls":[{"name":"Bash","input":{"command":"echo > busy; sleep 30"}}]}`)
	}
	turns = append(turns, `{"text":"done"}`)
	script := writeScript(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	cmd := exec.Command(semaBin, "run", "--model", "scripted/"+script, "--sandbox", sandboxMode, "--mcp-config", string(cfg),
		"--permission-mode", "bypassPermissions", "--output-format", "json", "go")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, home(t)...)
	var out logBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Cleanup(func() {
		for _, m := range []string{childMark, jobMark} {
			for _, pid := range processesWith(m) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if end == "exit" {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the run failed: %v\n%s", err, out.String())
		}
	} else {
		sig := map[string]syscall.Signal{"term": syscall.SIGTERM, "hup": syscall.SIGHUP, "kill": syscall.SIGKILL}[end]
		busy := filepath.Join(dir, "busy")
		for deadline := time.Now().Add(30 * time.Second); !exists(busy); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the second command never started:\n%s", out.String())
			}
		}
		cmd.Process.Signal(sig)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("sema did not end on %v:\n%s", sig, out.String())
		}
	}
	if !exists(started) {
		t.Fatalf("the setsid job was never started:\n%s", out.String())
	}
	time.Sleep(3 * time.Second)
	mcpChild, job = processesWith(childMark), processesWith(jobMark)
	before := size(filepath.Join(dir, "ticks"))
	time.Sleep(500 * time.Millisecond)
	grows = size(filepath.Join(dir, "ticks")) > before
	return mcpChild, job, grows
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func size(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// Nothing a run started outlives it: neither the children of a stdio MCP server (one in
// its group, one that left it) nor a Bash job that left its process group with setsid,
// whether the run completes or sema is ended by SIGTERM, SIGHUP or SIGKILL, with the
// sandbox off or on. Three seconds after sema ended, no such process is alive and the
// job's file no longer grows. SEMA_SOAK=N runs each case N times and logs the count of
// trials that left something.
func TestNothingOutlivesTheRun(t *testing.T) {
	trials := 1
	if n, err := strconv.Atoi(os.Getenv("SEMA_SOAK")); err == nil && n > 0 {
		trials = n
	}
	for _, sb := range []string{"off", "auto"} {
		for _, end := range []string{"exit", "term", "hup", "kill"} {
			t.Run("sandbox "+sb+"/"+end, func(t *testing.T) {
				left := 0
				for range trials {
					child, job, grows := leftoverTrial(t, sb, end)
					if len(child) > 0 || len(job) > 0 || grows {
						left++
						t.Errorf("alive after sema ended: MCP server's children %v, setsid job %v (its file still grows: %v)", child, job, grows)
					}
				}
				t.Logf("%d of %d trials left a process behind", left, trials)
			})
		}
	}
}
