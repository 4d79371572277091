package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// acpClient speaks the Agent Client Protocol to a `sema acp` process, as an editor
// does: JSON-RPC lines on its stdin and stdout.
type acpClient struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan map[string]any
	next    int
	stderr  *strings.Builder
	answers func(req map[string]any) string // the option chosen for a permission request
	updates []map[string]any                // every session/update's update, in order
	asked   []map[string]any                // every permission request's params
	// unsaved are the editor's buffers with unsaved changes, by absolute path: what
	// fs/read_text_file answers for them instead of the disk.
	unsaved map[string]string
	fsReads []map[string]any // every fs/read_text_file's params
	// fsWrites are every fs/write_text_file's params; each write is saved to the disk
	// and replaces the path's buffer, as an editor does.
	fsWrites []map[string]any
}

// serveFS answers a file request of the agent as an editor with unsaved buffers does.
func (c *acpClient) serveFS(m map[string]any) {
	params := m["params"].(map[string]any)
	path, _ := params["path"].(string)
	if m["method"] == "fs/read_text_file" {
		c.fsReads = append(c.fsReads, params)
		text, ok := c.unsaved[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				c.write(map[string]any{"id": m["id"], "error": map[string]any{"code": -32002, "message": err.Error()}})
				return
			}
			text = string(b)
		}
		c.write(map[string]any{"id": m["id"], "result": map[string]any{"content": text}})
		return
	}
	c.fsWrites = append(c.fsWrites, params)
	content, _ := params["content"].(string)
	delete(c.unsaved, path)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		c.write(map[string]any{"id": m["id"], "error": map[string]any{"code": -32603, "message": err.Error()}})
		return
	}
	c.write(map[string]any{"id": m["id"], "result": nil})
}

func startACP(t *testing.T, dir, state, script string, answers func(map[string]any) string, flags ...string) *acpClient {
	t.Helper()
	cmd := exec.Command(semaBin, append([]string{"acp", "--model", "scripted/" + script, "--home", state, "--sandbox", "off"}, flags...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &acpClient{t: t, cmd: cmd, in: in, lines: make(chan map[string]any, 1024), stderr: &strings.Builder{}, answers: answers, unsaved: map[string]string{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unreadable": sc.Text()}
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

func (c *acpClient) write(m map[string]any) {
	c.t.Helper()
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to sema acp: %v", err)
	}
}

// send sends a request and returns its id.
func (c *acpClient) send(method string, params any) float64 {
	c.next++
	c.write(map[string]any{"id": c.next, "method": method, "params": params})
	return float64(c.next)
}

// wait handles the agent's messages (updates recorded, permission requests answered)
// until the answer to id, which it returns.
func (c *acpClient) wait(id float64) map[string]any {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("sema acp closed stdout; stderr:\n%s", c.stderr)
			}
			if u, ok := m["unreadable"]; ok {
				c.t.Fatalf("sema acp wrote a line that is not JSON: %q", u)
			}
			if m["jsonrpc"] != "2.0" {
				c.t.Fatalf("a message without jsonrpc 2.0: %v", m)
			}
			switch m["method"] {
			case "session/update":
				c.updates = append(c.updates, m["params"].(map[string]any)["update"].(map[string]any))
			case "session/request_permission":
				params := m["params"].(map[string]any)
				c.asked = append(c.asked, params)
				c.write(map[string]any{"id": m["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": c.answers(params)}}})
			case "fs/read_text_file", "fs/write_text_file":
				c.serveFS(m)
			case nil:
				if m["id"] == id {
					return m
				}
				c.t.Fatalf("an answer to no request: %v", m)
			default:
				c.t.Fatalf("an unexpected request or notification: %v", m)
			}
		case <-timeout:
			c.t.Fatalf("no answer to request %v in 30 s; stderr:\n%s", id, c.stderr)
		}
	}
}

// call sends a request and waits for its result; an error answer fails the test.
func (c *acpClient) call(method string, params any) map[string]any {
	c.t.Helper()
	m := c.wait(c.send(method, params))
	if m["error"] != nil {
		c.t.Fatalf("%s: %v", method, m["error"])
	}
	r, _ := m["result"].(map[string]any)
	return r
}

func (c *acpClient) updatesOf(kind string) []map[string]any {
	var out []map[string]any
	for _, u := range c.updates {
		if u["sessionUpdate"] == kind {
			out = append(out, u)
		}
	}
	return out
}

// processRunning reports whether a process's command line is argv.
func processRunning(argv ...string) bool {
	want := strings.Join(argv, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == want {
			return true
		}
	}
	return false
}

func TestACPSessionEndToEnd(t *testing.T) {
	ws := writeTree(t, map[string]string{"a.txt": "hello\n",
		".sema/commands/greet.md": "---\ndescription: Greet someone\nargument-hint: NAME\n---\nSay hello to $ARGUMENTS.\n"})
	ws, _ = filepath.EvalSymlinks(ws)
	state := t.TempDir()
	const sleep = "41.75" // a sleep no other process runs
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]},
		{"text":"Editing.","tool_calls":[{"name":"Edit","input":{"file_path":"a.txt","old_string":"hello","new_string":"goodbye"}}]},
		{"text":"Edited."},
		{"tool_calls":[{"name":"Bash","input":{"command":"touch made.txt"}}]},
		{"text":"Rejected."},
		{"tool_calls":[{"name":"Bash","input":{"command":"touch made.txt"}}]},
		{"text":"Made."},
		{"tool_calls":[{"name":"Bash","input":{"command":"sleep `+sleep+`"}}]},
		{"text":"Slept."}]}`)
	choices := []string{"allow_once", "reject_once", "allow_once", "allow_once"}
	c := startACP(t, ws, state, script, func(map[string]any) string {
		if len(choices) == 0 {
			t.Error("more questions than the scenario has")
			return "reject_once"
		}
		o := choices[0]
		choices = choices[1:]
		return o
	})
	init := c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": true}})
	if init["protocolVersion"] != float64(1) || init["agentCapabilities"].(map[string]any)["loadSession"] != true {
		t.Fatalf("initialize: %v", init)
	}
	created := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	sid, _ := created["sessionId"].(string)
	if modes := created["modes"].(map[string]any); modes["currentModeId"] != "default" {
		t.Fatalf("session/new: %v", created)
	}
	prompt := func(text string) string {
		t.Helper()
		r := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
		s, _ := r["stopReason"].(string)
		return s
	}

	// An edit, allowed once: the diff is reported and the file written.
	if s := prompt("say goodbye"); s != "end_turn" {
		t.Fatalf("stop reason %q", s)
	}
	if len(c.asked) != 1 || c.asked[0]["toolCall"].(map[string]any)["kind"] != "edit" {
		t.Fatalf("questions %v", c.asked)
	}
	var diff map[string]any
	for _, u := range c.updatesOf("tool_call_update") {
		if content, _ := u["content"].([]any); u["status"] == "completed" && len(content) == 1 && content[0].(map[string]any)["type"] == "diff" {
			diff = content[0].(map[string]any)
		}
	}
	if diff == nil || diff["path"] != filepath.Join(ws, "a.txt") || diff["oldText"] != "hello\n" || diff["newText"] != "goodbye\n" {
		t.Fatalf("no diff of a.txt among %v", c.updatesOf("tool_call_update"))
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "goodbye\n" {
		t.Fatalf("a.txt is %q", b)
	}
	// The custom commands were announced after session/new's answer.
	if u := c.updatesOf("available_commands_update"); len(u) != 1 || fmt.Sprint(u[0]["availableCommands"]) != "[map[description:Greet someone input:map[hint:NAME] name:greet]]" {
		t.Errorf("the available_commands_update after session/new does not list the workspace's command: %v", u)
	}

	// A command rejected once does not run; the same command allowed does.
	if s := prompt("make it"); s != "end_turn" {
		t.Fatalf("stop reason %q", s)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Fatal("the rejected command ran")
	}
	if s := prompt("make it, really"); s != "end_turn" {
		t.Fatalf("stop reason %q", s)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}

	// The mode picker.
	c.updates = nil
	c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "plan"})
	if m := c.updatesOf("current_mode_update"); len(m) != 1 || m[0]["currentModeId"] != "plan" {
		t.Fatalf("current_mode_update after set_mode plan: %v", c.updates)
	}
	if m := c.wait(c.send("session/set_mode", map[string]any{"sessionId": sid, "modeId": "bypassPermissions"})); m["error"] == nil {
		t.Fatal("bypassPermissions was set though sema acp was not started with it")
	}
	c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "default"})

	// A running command cancelled: the prompt says cancelled and no sleep is left.
	id := c.send("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "wait"}}})
	seen := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for !processRunning("sleep", sleep) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		seen <- processRunning("sleep", sleep)
		c.write(map[string]any{"method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	}()
	if r := c.wait(id); r["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Fatalf("the cancelled prompt answered %v", r)
	}
	if !<-seen {
		t.Fatal("the sleep never ran: the cancel proves nothing")
	}
	for end := time.Now().Add(5 * time.Second); processRunning("sleep", sleep); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the cancelled command's sleep is still running")
		}
	}
	if m := c.wait(c.send("session/prompt", map[string]any{"sessionId": "no-such", "prompt": []any{}})); m["error"] == nil {
		t.Fatal("a prompt in an unknown session was answered")
	}
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("sema acp: %v\n%s", err, c.stderr)
	}

	// session/load in a new process replays the history.
	l := startACP(t, ws, state, script, func(map[string]any) string { return "reject_once" })
	l.call("initialize", map[string]any{"protocolVersion": 1})
	l.call("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}})
	var said []string
	for _, u := range l.updatesOf("user_message_chunk") {
		said = append(said, u["content"].(map[string]any)["text"].(string))
	}
	if strings.Join(said, "|") != "say goodbye|make it|make it, really|wait" {
		t.Errorf("the replay's prompts: %q", said)
	}
	if len(l.updatesOf("tool_call")) != 5 || len(l.updatesOf("agent_message_chunk")) == 0 {
		t.Errorf("the replay: %d tool calls, %d message chunks: %v", len(l.updatesOf("tool_call")), len(l.updatesOf("agent_message_chunk")), l.updates)
	}
	completed := 0
	for _, u := range l.updatesOf("tool_call_update") {
		if u["status"] == "completed" {
			completed++
		}
	}
	if completed < 3 {
		t.Errorf("the replay reports %d completed calls, want the read, the edit and the allowed command: %v", completed, l.updatesOf("tool_call_update"))
	}
	l.in.Close()
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("sema acp: %v\n%s", err, l.stderr)
	}

	// The session is sema's: listed with the first prompt as its title,
	if r := sema(t, ws, nil, "", "sessions", "list", "--home", state); r.code != 0 || !strings.Contains(r.stdout, sid) || !strings.Contains(r.stdout, "say goodbye") {
		t.Errorf("sema sessions list: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// continued by the command line,
	again := writeScript(t, `{"turns":[{"text":"continued"}]}`)
	r := sema(t, ws, nil, "", "-p", "--resume", sid, "--home", state, "--model", "scripted/"+again, "--sandbox", "off", "--output-format", "json", "go on")
	if r.code != 0 || jsonResult(t, r.stdout)["session_id"] != sid {
		t.Fatalf("sema -p --resume %s: exit %d\n%s\n%s", sid, r.code, r.stdout, r.stderr)
	}
	// and rewinds its files: the edit the editor allowed is undone.
	r = sema(t, ws, nil, "", "rewind", sid, "--to", "1", "--files", "--home", state)
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); r.code != 0 || string(b) != "hello\n" {
		t.Fatalf("sema rewind %s --to 1: exit %d, a.txt %q\n%s\n%s", sid, r.code, b, r.stdout, r.stderr)
	}
}

func TestACPParkedQuestionIsAnsweredBySemaApprove(t *testing.T) {
	ws := writeTree(t, map[string]string{"keep.txt": "x\n"})
	ws, _ = filepath.EvalSymlinks(ws)
	state := t.TempDir()
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"touch parked.txt"}}]},
		{"text":"Done."}]}`)
	c := startACP(t, ws, state, script, func(p map[string]any) string {
		t.Errorf("a question went to the editor under --on-ask park: %v", p)
		return "reject_once"
	}, "--on-ask", "park")
	c.call("initialize", map[string]any{"protocolVersion": 1})
	sid := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})["sessionId"].(string)
	r := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "touch it"}}})
	if r["stopReason"] != "end_turn" {
		t.Fatalf("stop reason %v", r)
	}
	said := ""
	for _, u := range c.updatesOf("agent_message_chunk") {
		said += u["content"].(map[string]any)["text"].(string)
	}
	m := regexp.MustCompile("sema approve " + sid + " --checkpoint (\\S+) --allow").FindStringSubmatch(said)
	if m == nil {
		t.Fatalf("the answer does not say how to answer the parked question: %q", said)
	}
	if _, err := os.Stat(filepath.Join(ws, "parked.txt")); err == nil {
		t.Fatal("the parked command ran")
	}
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("sema acp: %v\n%s", err, c.stderr)
	}
	a := sema(t, ws, nil, "", "approve", sid, "--checkpoint", m[1], "--allow", "--home", state, "--model", "scripted/"+script, "--sandbox", "off")
	if _, err := os.Stat(filepath.Join(ws, "parked.txt")); a.code != 0 || err != nil {
		t.Fatalf("sema approve: exit %d, parked.txt: %v\n%s\n%s", a.code, err, a.stdout, a.stderr)
	}
}

func TestACPEditorGoneEndsTheRunningCommand(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	state := t.TempDir()
	const sleep = "43.125" // a sleep no other process runs
	script := writeScript(t, `{"turns":[{"tool_calls":[{"name":"Bash","input":{"command":"sleep `+sleep+`"}}]},{"text":"Slept."}]}`)
	c := startACP(t, ws, state, script, func(map[string]any) string { return "allow_once" })
	c.call("initialize", map[string]any{"protocolVersion": 1})
	sid := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})["sessionId"].(string)
	c.send("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "wait"}}})
	// Answer the question, then wait for the command to run.
	for end := time.Now().Add(20 * time.Second); !processRunning("sleep", sleep); time.Sleep(20 * time.Millisecond) {
		select {
		case m := <-c.lines:
			if m["method"] == "session/request_permission" {
				c.write(map[string]any{"id": m["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}})
			}
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("the sleep never ran; stderr:\n%s", c.stderr)
		}
	}
	// The editor goes away: stdin closes. sema acp ends the leg and exits, leaving nothing.
	c.in.Close()
	go func() {
		for range c.lines {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sema acp: %v\n%s", err, c.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sema acp did not exit after its stdin closed")
	}
	if processRunning("sleep", sleep) {
		t.Fatal("the command's sleep outlived sema acp")
	}
}

// TestACPPromptWithAnImage: an image block of a prompt reaches the engine, which checks
// it as it checks every attached image: a real PNG goes with the prompt (the answer
// comes, the session's transcript holds the image), bytes that are no image are refused
// by the engine's code before anything runs.
func TestACPPromptWithAnImage(t *testing.T) {
	ws := writeTree(t, map[string]string{"keep.txt": "x\n"})
	ws, _ = filepath.EvalSymlinks(ws)
	state := t.TempDir()
	script := writeScript(t, `{"turns":[],"threads":[{"match":"what is in the picture","turns":[{"text":"A single pixel."}]}]}`)
	c := startACP(t, ws, state, script, func(map[string]any) string { return "reject_once" })
	init := c.call("initialize", map[string]any{"protocolVersion": 1})
	if caps := init["agentCapabilities"].(map[string]any)["promptCapabilities"].(map[string]any); caps["image"] != true {
		t.Fatalf("promptCapabilities %v: images not offered", caps)
	}
	sid := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})["sessionId"].(string)
	const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	bad := c.wait(c.send("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
		map[string]any{"type": "text", "text": "what is in the picture"},
		map[string]any{"type": "image", "mimeType": "image/png", "data": "AAAAAAAA"}}}))
	e, _ := bad["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["data"]), "config.image_invalid") {
		t.Fatalf("bytes that are no image: %v", bad)
	}
	r := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
		map[string]any{"type": "text", "text": "what is in the picture"},
		map[string]any{"type": "image", "mimeType": "image/png", "data": pixel}}})
	said := ""
	for _, u := range c.updatesOf("agent_message_chunk") {
		said += u["content"].(map[string]any)["text"].(string)
	}
	if r["stopReason"] != "end_turn" || !strings.Contains(said, "A single pixel.") {
		t.Fatalf("the prompt with an image: %v, said %q", r, said)
	}
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("sema acp: %v\n%s", err, c.stderr)
	}
	show := sema(t, ws, nil, "", "sessions", "show", sid, "--home", state, "--output-format", "json")
	if show.code != 0 || !strings.Contains(show.stdout, `"media_type": "image/png"`) {
		t.Fatalf("the stored session does not hold the image: exit %d\n%.2000s\n%s", show.code, show.stdout, show.stderr)
	}
}

// TestACPEditorGoneMidQuestionParksIt: the editor goes away while sema's question is
// open; the question is not lost nor answered — it is parked, sema acp says on stderr
// how to answer it, exits cleanly, and `sema approve` runs the call once.
func TestACPEditorGoneMidQuestionParksIt(t *testing.T) {
	ws := writeTree(t, map[string]string{"keep.txt": "x\n"})
	ws, _ = filepath.EvalSymlinks(ws)
	state := t.TempDir()
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"touch deferred.txt"}}]},
		{"text":"Done."}]}`)
	c := startACP(t, ws, state, script, func(map[string]any) string { return "allow_once" })
	c.call("initialize", map[string]any{"protocolVersion": 1})
	sid := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})["sessionId"].(string)
	c.send("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "touch it"}}})
	deadline := time.After(30 * time.Second)
	for asked := false; !asked; {
		select {
		case m, ok := <-c.lines:
			if !ok {
				t.Fatalf("sema acp closed stdout before asking; stderr:\n%s", c.stderr)
			}
			asked = m["method"] == "session/request_permission"
		case <-deadline:
			t.Fatalf("no question in 30 s; stderr:\n%s", c.stderr)
		}
	}
	c.in.Close() // the editor goes away, the question unanswered
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("sema acp: %v\n%s", err, c.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "deferred.txt")); err == nil {
		t.Fatal("the unanswered command ran")
	}
	m := regexp.MustCompile("sema approve " + sid + " --checkpoint (\\S+) --allow").FindStringSubmatch(c.stderr.String())
	if m == nil {
		t.Fatalf("sema acp did not say how to answer the parked question:\n%s", c.stderr)
	}
	a := sema(t, ws, nil, "", "approve", sid, "--checkpoint", m[1], "--allow", "--home", state, "--model", "scripted/"+script, "--sandbox", "off")
	if _, err := os.Stat(filepath.Join(ws, "deferred.txt")); a.code != 0 || err != nil {
		t.Fatalf("sema approve: exit %d, deferred.txt: %v\n%s\n%s", a.code, err, a.stdout, a.stderr)
	}
}

// A client that serves fs/read_text_file and fs/write_text_file gets the model's reads
// and edits of text files: the model reads the unsaved buffer, the edit of that text
// is handed to the editor after the usual question, and a client that offers nothing
// gets no file request.
func TestACPEditsGoThroughTheEditorsBuffers(t *testing.T) {
	ws := writeTree(t, map[string]string{"a.txt": "hello\n"})
	ws, _ = filepath.EvalSymlinks(ws)
	path := filepath.Join(ws, "a.txt")
	state := t.TempDir()
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]},
		{"tool_calls":[{"name":"Edit","input":{"file_path":"a.txt","old_string":"hello","new_string":"goodbye"}}]},
		{"text":"Edited."}]}`)
	c := startACP(t, ws, state, script, func(map[string]any) string { return "allow_once" })
	c.unsaved[path] = "hello, typed but not saved\n"
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}})
	sid := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})["sessionId"].(string)
	r := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "say goodbye"}}})
	if r["stopReason"] != "end_turn" {
		t.Fatalf("stop reason %v; stderr:\n%s", r, c.stderr)
	}
	if len(c.fsReads) == 0 {
		t.Fatal("the editor was never asked for the file")
	}
	for _, p := range c.fsReads {
		if p["sessionId"] != sid || p["path"] != path {
			t.Errorf("fs/read_text_file %v, want session %s and the absolute path", p, sid)
		}
	}
	if len(c.asked) != 1 || c.asked[0]["toolCall"].(map[string]any)["kind"] != "edit" {
		t.Fatalf("questions %v, want the edit's", c.asked)
	}
	if len(c.fsWrites) != 1 || c.fsWrites[0]["sessionId"] != sid || c.fsWrites[0]["path"] != path || c.fsWrites[0]["content"] != "goodbye, typed but not saved\n" {
		t.Fatalf("fs/write_text_file %v, want one write of the edited buffer", c.fsWrites)
	}
	// The model saw the buffer: the Read's result, as the client was shown it.
	saw := false
	for _, u := range c.updatesOf("tool_call_update") {
		if strings.Contains(fmt.Sprint(u["content"]), "typed but not saved") && u["status"] == "completed" {
			saw = true
		}
	}
	if !saw {
		t.Errorf("no completed call shows the buffer's text: %v", c.updatesOf("tool_call_update"))
	}
	// The edit's diff is of the editor's text, not the disk's.
	var diff map[string]any
	for _, u := range c.updatesOf("tool_call_update") {
		if content, _ := u["content"].([]any); u["status"] == "completed" && len(content) == 1 && content[0].(map[string]any)["type"] == "diff" {
			diff = content[0].(map[string]any)
		}
	}
	if diff == nil || diff["oldText"] != "hello, typed but not saved\n" || diff["newText"] != "goodbye, typed but not saved\n" {
		t.Errorf("the edit's diff is %v, want the buffer's text before and after", diff)
	}
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("sema acp: %v\n%s", err, c.stderr)
	}

	// Without the capabilities, the same prompt reads the disk and asks the editor nothing.
	if err := os.WriteFile(path, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startACP(t, ws, t.TempDir(), script, func(map[string]any) string { return "allow_once" })
	n.unsaved[path] = "never shown\n"
	n.call("initialize", map[string]any{"protocolVersion": 1})
	sid = n.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})["sessionId"].(string)
	n.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "say goodbye"}}})
	if len(n.fsReads)+len(n.fsWrites) != 0 {
		t.Fatalf("a client that offered no fs capability was sent file requests: %v %v", n.fsReads, n.fsWrites)
	}
	if b, _ := os.ReadFile(path); string(b) != "goodbye\n" {
		t.Fatalf("a.txt is %q, want the disk's text edited", b)
	}
}
