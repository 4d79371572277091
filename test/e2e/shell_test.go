package e2e

import (
	"github.com/sema-agent/sema/sandbox"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBashUnderAcceptEditsAsksOnlyWhereTheTableSays(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Bash","input":{"command":"mkdir build && touch build/out"}}]},
		{"tool_calls":[{"name":"Bash","input":{"command":"ls build && cat a.txt | wc -l"}}]},
		{"tool_calls":[{"name":"Bash","input":{"command":"rm -rf .."}}]},
		{"tool_calls":[{"name":"Bash","input":{"command":"echo pwned > ../outside.txt"}}]},
		{"text":"done"}]}`)
	r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--permission-mode", "acceptEdits", "--on-ask", "deny", "--output-format", "stream-json", "build")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var results []map[string]any
	var manifest map[string]any
	for _, e := range streamEvents(t, r.stdout) {
		switch e["type"] {
		case "tool_result":
			results = append(results, e)
		case "system":
			manifest = e["manifest"].(map[string]any)
		}
	}
	if len(results) != 4 {
		t.Fatalf("%d results", len(results))
	}
	if results[0]["is_error"] != false || results[1]["is_error"] != false || !strings.Contains(results[1]["content"].(string), "out") {
		t.Fatalf("allowed commands: %v %v", results[0], results[1])
	}
	for _, i := range []int{2, 3} {
		if results[i]["is_error"] != true || results[i]["code"] != "permission.denied" {
			t.Errorf("command %d was not denied: %v", i, results[i])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "build", "out")); err != nil {
		t.Fatal("mkdir/touch did not run")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside.txt")); !os.IsNotExist(err) {
		t.Fatal("a write outside the root ran")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("the root was removed")
	}
	shell := manifest["shell"].(map[string]any)
	sb, _ := shell["sandbox"].(map[string]any)
	if shell["full_shell"] != true || shell["in_file_history"] != true || sb == nil || sb["mode"] != "auto" ||
		sb["sandboxed"] != sandbox.Probe().Available() || sb["network"] != false {
		t.Fatalf("manifest shell facts %v", shell)
	}
}

func TestReadOnlyBandCannotChangeAByte(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"bash_readonly","input":{"command":"grep -n alpha a.txt"}}]},
		{"tool_calls":[{"name":"bash_readonly","input":{"command":"rm a.txt"}}]},
		{"tool_calls":[{"name":"bash_readonly","input":{"command":"echo x > a.txt"}}]},
		{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"changed"}}]},
		{"text":"done"}]}`)
	r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--read-only", "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "look")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var results []map[string]any
	for _, e := range streamEvents(t, r.stdout) {
		if e["type"] == "tool_result" {
			results = append(results, e)
		}
	}
	if results[0]["is_error"] != false || !strings.Contains(results[0]["content"].(string), "1:alpha") {
		t.Fatalf("grep: %v", results[0])
	}
	for _, res := range results[1:] {
		if res["is_error"] != true {
			t.Errorf("a change was not refused: %v", res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha\n" {
		t.Fatalf("a.txt = %q", b)
	}
}
