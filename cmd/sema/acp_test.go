package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sema acp refuses, before it reads a line, the flags that name what the editor decides
// or that would read stdin, and writes nothing on stdout, which is the protocol's.
func TestACPRefusesFlagsTheEditorDecides(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"acp", "--resume", "x"}, "takes no --resume"},
		{[]string{"acp", "--continue"}, "takes no --continue"},
		{[]string{"acp", "--cwd", "."}, "takes no --cwd"},
		// (--output-format json also makes the command line print its refusal as a JSON
		// result on stdout, as for every command: it is the flag's own refusal.)
		{[]string{"acp", "--output-format", "text"}, "takes no --output-format"},
		{[]string{"acp", "--input-format", "stream-json"}, "takes no --input-format"},
		{[]string{"acp", "--on-ask", "prompt"}, "--on-ask prompt would read stdin"},
		{[]string{"acp", "--permission-mode", "yolo"}, "config.permission_mode_invalid"},
		{[]string{"acp", "hello"}, "unknown command"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("sema %v: exit %d, stdout %q, stderr %q", c.args, code, out.String(), errb.String())
		}
	}
	// What it refuses, its help does not offer; what it takes, it does.
	var help, errb bytes.Buffer
	if code := run(context.Background(), []string{"acp", "--help"}, strings.NewReader(""), &help, &errb); code != exitOK {
		t.Fatalf("sema acp --help: exit %d, stderr %q", code, errb.String())
	}
	offered := func(flag string) bool {
		return regexp.MustCompile(`(?m)^\s+(-\w, )?` + flag + ` `).MatchString(help.String())
	}
	for _, name := range acpRefused {
		if offered("--" + name) {
			t.Errorf("sema acp --help offers --%s, which it refuses:\n%s", name, help.String())
		}
	}
	for _, name := range []string{"--model", "--permission-mode", "--settings", "--home"} {
		if !offered(name) {
			t.Errorf("sema acp --help does not offer %s:\n%s", name, help.String())
		}
	}
}

// Everything sema acp writes on stdout is a JSON-RPC message; what is not the protocol
// goes to stderr.
func TestACPWritesOnlyTheProtocolOnStdout(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	script := filepath.Join(t.TempDir(), "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":"hello from the script"}]}`), 0o644)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"acp", "--model", "scripted/" + script, "--home", home, "--sandbox", "off"}, inR, outW, &errb)
		outW.Close()
	}()
	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil || m["jsonrpc"] != "2.0" {
				t.Errorf("stdout carries a line that is not JSON-RPC: %q", sc.Text())
			}
			lines <- m
		}
		close(lines)
	}()
	answer := func(id float64) map[string]any {
		t.Helper()
		for {
			select {
			case m := <-lines:
				if m["id"] == id && m["method"] == nil {
					return m
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no answer to %v; stderr:\n%s", id, errb.String())
			}
		}
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"test","version":"1"}}}`+"\n")
	answer(1)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": map[string]any{"cwd": ws, "mcpServers": []any{}}})
	inW.Write(append(b, '\n'))
	created := answer(2)
	sid, _ := created["result"].(map[string]any)["sessionId"].(string)
	b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}})
	inW.Write(append(b, '\n'))
	if r := answer(3); r["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v\n%s", r, errb.String())
	}
	inW.Close()
	for range lines {
	}
	if code := <-done; code != 0 {
		t.Fatalf("sema acp exited %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "sema acp: test 1 connected") {
		t.Errorf("stderr does not say who connected:\n%s", errb.String())
	}
}
