package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Agent SDK protocol as the SDKs drive it: sema started with their launch line, the
// prompts and control requests on stdin, one JSON object per line each way. The Node
// test (test/sdk) drives the same through the real TypeScript SDK.

// sdkProc is a running `sema` in SDK mode.
type sdkProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any
	mu    sync.Mutex
	seen  []map[string]any
	errb  strings.Builder
	done  chan struct{}
	code  int
}

// startSDK starts sema with the SDK's launch line plus extra flags in dir.
func startSDK(t *testing.T, dir string, env []string, extra ...string) *sdkProc {
	t.Helper()
	sourcesOnce.Do(touchSources)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	args := append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--sandbox=off"}, extra...)
	cmd := exec.CommandContext(ctx, semaBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &sdkProc{t: t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 1024), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{b: &p.errb, mu: &p.mu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not a JSON object: %v\n%s", err, sc.Text())
				continue
			}
			p.lines <- m
		}
		close(p.lines)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	return p
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (p *sdkProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

// send writes one line.
func (p *sdkProc) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("writing to sema: %v", err)
	}
}

func (p *sdkProc) initialize(id string, extra map[string]any) {
	req := map[string]any{"subtype": "initialize", "systemPrompt": []string{""}}
	for k, v := range extra {
		req[k] = v
	}
	p.send(map[string]any{"type": "control_request", "request_id": id, "request": req})
}

func (p *sdkProc) user(text string) {
	p.send(map[string]any{"type": "user", "session_id": "", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}, "parent_tool_use_id": nil})
}

func (p *sdkProc) control(id, subtype string, fields map[string]any) {
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	p.send(map[string]any{"type": "control_request", "request_id": id, "request": req})
}

// next waits for the next line that match accepts, keeping every line seen.
func (p *sdkProc) next(what string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("sema's stdout ended before %s; stderr:\n%s", what, p.stderr())
			}
			p.seen = append(p.seen, m)
			if match(m) {
				return m
			}
		case <-timeout:
			p.t.Fatalf("no %s within 60s; stderr:\n%s", what, p.stderr())
		}
	}
}

func isType(typ string, subtype ...string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		if m["type"] != typ {
			return false
		}
		return len(subtype) == 0 || m["subtype"] == subtype[0]
	}
}

func (p *sdkProc) response(id string) map[string]any {
	p.t.Helper()
	m := p.next("the control_response to "+id, func(m map[string]any) bool {
		r, _ := m["response"].(map[string]any)
		return m["type"] == "control_response" && r["request_id"] == id
	})
	return m["response"].(map[string]any)
}

func (p *sdkProc) result() map[string]any {
	p.t.Helper()
	return p.next("a result", isType("result"))
}

// finish closes stdin and returns the exit code.
func (p *sdkProc) finish() int {
	p.t.Helper()
	p.stdin.Close()
	for range p.lines {
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("sema did not exit after its stdin ended; stderr:\n%s", p.stderr())
	}
	return p.code
}

func TestSDKOneShot(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	script := writeScript(t, `{"turns":[{"text":"hello from the model"}]}`)
	p := startSDK(t, dir, home(t), "--model=scripted/"+script)
	p.initialize("init-1", nil)
	p.user("hello world")
	init := p.response("init-1")
	if init["subtype"] != "success" {
		t.Fatalf("initialize: %v", init)
	}
	body := init["response"].(map[string]any)
	for _, k := range []string{"commands", "agents", "output_style", "models", "account", "pid", "mcp_servers_applied"} {
		if _, ok := body[k]; !ok {
			t.Errorf("the initialize answer lacks %s: %v", k, body)
		}
	}
	sys := p.next("system/init", isType("system", "init"))
	sid, _ := sys["session_id"].(string)
	if sid == "" || sys["cwd"] == nil || sys["permissionMode"] != "default" || sys["tools"] == nil || sys["manifest"] == nil {
		t.Fatalf("system/init %v", sys)
	}
	res := p.result()
	if res["subtype"] != "success" || res["is_error"] != false || res["result"] != "hello from the model" || res["session_id"] != sid {
		t.Fatalf("result %v", res)
	}
	for _, k := range []string{"duration_ms", "duration_api_ms", "num_turns", "total_cost_usd", "usage", "modelUsage", "permission_denials", "status"} {
		if _, ok := res[k]; !ok {
			t.Errorf("the result lacks %s", k)
		}
	}
	for _, m := range p.seen {
		if m["type"] == "control_response" {
			continue
		}
		if m["uuid"] == nil || m["session_id"] != sid {
			t.Errorf("a %v line without uuid or session_id: %v", m["type"], m)
		}
	}
	if code := p.finish(); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr())
	}
}

// Two user messages are two turns of one session.
func TestSDKStreamingInputContinuesTheSession(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	script := writeScript(t, `{"turns":[{"text":"first answer"},{"text":"second answer"}]}`)
	env := home(t)
	p := startSDK(t, dir, env, "--model=scripted/"+script)
	p.initialize("i", nil)
	p.user("the first prompt, about kiwis")
	first := p.result()
	p.user("the second prompt, about mangoes")
	second := p.result()
	if first["result"] != "first answer" || second["result"] != "second answer" || first["session_id"] != second["session_id"] {
		t.Fatalf("results %v / %v", first, second)
	}
	if code := p.finish(); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr())
	}
	// The session holds both prompts.
	r := sema(t, dir, env, "", "sessions", "show", first["session_id"].(string))
	if !strings.Contains(r.stdout, "about kiwis") || !strings.Contains(r.stdout, "about mangoes") {
		t.Fatalf("sessions show:\n%s%s", r.stdout, r.stderr)
	}
}

// canUseTool: a question becomes a can_use_tool control request; allow runs the call,
// deny refuses it with the SDK's message.
func TestSDKCanUseTool(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		dir := writeTree(t, map[string]string{"README.md": "hi\n"})
		script := scriptOf(t, writeOf("a.txt", "x\n"))
		p := startSDK(t, dir, home(t), "--model=scripted/"+script, "--permission-prompt-tool=stdio")
		p.initialize("i", nil)
		p.user("write it")
		req := p.next("can_use_tool", func(m map[string]any) bool {
			r, _ := m["request"].(map[string]any)
			return m["type"] == "control_request" && r["subtype"] == "can_use_tool"
		})
		r := req["request"].(map[string]any)
		input, _ := r["input"].(map[string]any)
		if r["tool_name"] != "Write" || input["file_path"] != "a.txt" || r["tool_use_id"] == "" || r["tool_use_id"] == nil {
			t.Fatalf("can_use_tool %v", r)
		}
		answer := map[string]any{"behavior": "allow", "updatedInput": input}
		if !allow {
			answer = map[string]any{"behavior": "deny", "message": "not in this repository"}
		}
		answer["toolUseID"] = r["tool_use_id"]
		p.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": req["request_id"], "response": answer}})
		res := p.result()
		if exists(filepath.Join(dir, "a.txt")) != allow {
			t.Fatalf("allow=%v: a.txt exists=%v; result %v", allow, !allow, res)
		}
		denials, _ := res["permission_denials"].([]any)
		if allow && len(denials) != 0 || !allow && len(denials) != 1 {
			t.Fatalf("allow=%v: denials %v", allow, denials)
		}
		if !allow {
			d := denials[0].(map[string]any)
			if d["tool_name"] != "Write" || d["tool_use_id"] != r["tool_use_id"] || d["tool_input"] == nil {
				t.Fatalf("denial %v", d)
			}
			var sawResult bool
			for _, m := range p.seen {
				msg, _ := m["message"].(map[string]any)
				if m["type"] == "user" && msg != nil {
					b, _ := json.Marshal(msg)
					sawResult = sawResult || strings.Contains(string(b), "not in this repository") && strings.Contains(string(b), `"is_error":true`)
				}
			}
			if !sawResult {
				t.Fatalf("no tool_result carrying the SDK's message: %v", p.seen)
			}
		}
		p.finish()
	}
}

// set_permission_mode before the first prompt applies to it; without it (the
// calibration) the same write is refused, nobody being asked.
func TestSDKSetPermissionModeBeforePrompt(t *testing.T) {
	t.Parallel()
	for _, set := range []bool{true, false} {
		dir := writeTree(t, map[string]string{"README.md": "hi\n"})
		p := startSDK(t, dir, home(t), "--model=scripted/"+scriptOf(t, writeOf("a.txt", "x\n")))
		p.initialize("i", nil)
		if set {
			p.control("m1", "set_permission_mode", map[string]any{"mode": "acceptEdits"})
			r := p.response("m1")
			if r["subtype"] != "success" || r["response"].(map[string]any)["mode"] != "acceptEdits" {
				t.Fatalf("set_permission_mode: %v", r)
			}
		}
		p.user("write it")
		res := p.result()
		if exists(filepath.Join(dir, "a.txt")) != set {
			t.Fatalf("mode set=%v: a.txt exists=%v; result %v", set, !set, res)
		}
		p.finish()
	}
}

// interrupt stops the running turn — a shell command that would sleep for minutes —
// and the session takes the next message.
func TestSDKInterrupt(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	script := writeScript(t, `{"turns":[{"tool_calls":[{"name":"Bash","input":{"command":"sleep 120"}}]},{"text":"after the interrupt"}]}`)
	p := startSDK(t, dir, home(t), "--model=scripted/"+script, "--permission-mode=bypassPermissions")
	p.initialize("i", nil)
	p.user("run the long thing")
	p.next("the Bash call", isType("assistant"))
	start := time.Now()
	p.control("int-1", "interrupt", nil)
	if r := p.response("int-1"); r["subtype"] != "success" {
		t.Fatalf("interrupt: %v", r)
	}
	res := p.result()
	errs, _ := res["errors"].([]any)
	if res["subtype"] != "error_during_execution" || res["is_error"] != true || len(errs) == 0 || res["status"] != "cancelled" {
		t.Fatalf("result %v", res)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the interrupt took %v", time.Since(start))
	}
	p.user("go on")
	if res := p.result(); res["subtype"] != "success" || res["result"] != "after the interrupt" {
		t.Fatalf("the turn after the interrupt: %v", res)
	}
	if code := p.finish(); code != 0 {
		t.Fatalf("exit %d after a successful last turn\n%s", code, p.stderr())
	}
}

// --resume continues a session in a new process.
func TestSDKResume(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	env := home(t)
	p := startSDK(t, dir, env, "--model=scripted/"+writeScript(t, `{"turns":[{"text":"remembered"}]}`))
	p.initialize("i", nil)
	p.user("remember the word kumquat")
	sid := p.result()["session_id"].(string)
	p.finish()

	q := startSDK(t, dir, env, "--model=scripted/"+writeScript(t, `{"turns":[{"text":"it was kumquat"}]}`), "--resume="+sid)
	q.initialize("i", nil)
	q.user("what was the word?")
	res := q.result()
	if res["session_id"] != sid || res["result"] != "it was kumquat" {
		t.Fatalf("resumed result %v (want session %s)", res, sid)
	}
	q.finish()
	r := sema(t, dir, env, "", "sessions", "show", sid)
	if !strings.Contains(r.stdout, "kumquat") || !strings.Contains(r.stdout, "what was the word") {
		t.Fatalf("the resumed session does not hold both prompts:\n%s%s", r.stdout, r.stderr)
	}
}

// --allowedTools (the SDK's spelling) allows without asking; plan mode writes nothing.
func TestSDKAllowedToolsAndPlanMode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flags []string
		lands bool
	}{
		{[]string{"--allowedTools=Write"}, true},
		{[]string{"--allowedTools=Write", "--permission-mode=plan"}, false},
		{[]string{"--disallowedTools=Write", "--permission-mode=bypassPermissions"}, false},
	} {
		dir := writeTree(t, map[string]string{"README.md": "hi\n"})
		p := startSDK(t, dir, home(t), append([]string{"--model=scripted/" + scriptOf(t, writeOf("a.txt", "x\n"))}, c.flags...)...)
		p.initialize("i", nil)
		p.user("write it")
		res := p.result()
		if exists(filepath.Join(dir, "a.txt")) != c.lands {
			t.Fatalf("%v: a.txt exists=%v; result %v", c.flags, !c.lands, res)
		}
		p.finish()
	}
}

// Every control request is answered: an unknown one with an error, never silence.
func TestSDKControlRequestsAreAnswered(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	p := startSDK(t, dir, home(t), "--model=scripted/"+writeScript(t, `{"turns":[{"text":"ok"}]}`))
	p.send(map[string]any{"type": "keep_alive"})
	p.initialize("i", nil)
	p.response("i")
	p.control("u1", "rewind_the_universe", nil)
	if r := p.response("u1"); r["subtype"] != "error" || !strings.Contains(r["error"].(string), "rewind_the_universe") {
		t.Fatalf("unknown subtype: %v", r)
	}
	p.control("s1", "mcp_status", nil)
	if r := p.response("s1"); r["subtype"] != "success" || r["response"].(map[string]any)["mcpServers"] == nil {
		t.Fatalf("mcp_status: %v", r)
	}
	p.control("b1", "set_permission_mode", map[string]any{"mode": "yolo"})
	if r := p.response("b1"); r["subtype"] != "error" {
		t.Fatalf("a bad mode: %v", r)
	}
	p.control("x1", "initialize", map[string]any{"sdkMcpServers": []string{"calc"}})
	if r := p.response("x1"); r["subtype"] != "error" || !strings.Contains(r["error"].(string), "sdkMcpServers") {
		t.Fatalf("an unsupported initialize field: %v", r)
	}
	p.user("hi")
	if res := p.result(); res["subtype"] != "success" {
		t.Fatalf("result %v", res)
	}
	p.finish()
}

// A hook the SDK registered in initialize runs as a hook_callback request: its deny
// refuses the call.
func TestSDKHookCallback(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	p := startSDK(t, dir, home(t), "--model=scripted/"+scriptOf(t, writeOf("a.txt", "x\n")), "--permission-mode=acceptEdits")
	p.initialize("i", map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Write", "hookCallbackIds": []string{"hook_0"}}}}})
	p.user("write it")
	req := p.next("hook_callback", func(m map[string]any) bool {
		r, _ := m["request"].(map[string]any)
		return m["type"] == "control_request" && r["subtype"] == "hook_callback"
	})
	r := req["request"].(map[string]any)
	in, _ := r["input"].(map[string]any)
	if r["callback_id"] != "hook_0" || in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "Write" {
		t.Fatalf("hook_callback %v", r)
	}
	p.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": req["request_id"],
		"response": map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "hooks say no"}}}})
	res := p.result()
	if exists(filepath.Join(dir, "a.txt")) {
		t.Fatalf("the SDK hook's deny did not hold: %v", res)
	}
	p.finish()
}

// A flag the SDKs send that sema does not implement is refused by name; one that only
// tunes what sema has no knob for is accepted.
func TestSDKFlags(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"README.md": "hi\n"})
	script := writeScript(t, `{"turns":[{"text":"ok"}]}`)
	r := sema(t, dir, home(t), "", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--model=scripted/"+script, "--fallback-model=claude-haiku-4-5")
	if r.code != 2 || !strings.Contains(r.stderr, "sdk.unsupported") || !strings.Contains(r.stderr, "--fallback-model") {
		t.Fatalf("--fallback-model: exit %d\n%s", r.code, r.stderr)
	}
	in := `{"type":"control_request","request_id":"i","request":{"subtype":"initialize"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":""}` + "\n"
	r = sema(t, dir, home(t), in, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--model=scripted/"+script,
		"--max-thinking-tokens=1000", "--setting-sources=", "--tools=Read,Write", "--include-partial-messages", "--no-session-persistence", "--await-initialize",
		"--allow-dangerously-skip-permissions", "--max-turns=3", "--append-system-prompt", "be brief")
	if r.code != 0 || !strings.Contains(r.stdout, `"subtype":"success"`) {
		t.Fatalf("the SDK's flags: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `"type":"stream_event"`) {
		t.Fatalf("--include-partial-messages wrote no stream_event line:\n%s", r.stdout)
	}
}
