package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeScript(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDemoRunsFromAFreshClone(t *testing.T) {
	r := sema(t, t.TempDir(), nil, "", "demo")
	if r.code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"DEMO MODE", "Glob", "Read", "status: completed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "tool.unknown") {
		t.Errorf("the demo called a tool that is not mounted:\n%s", r.stdout)
	}
}

func TestNoModelIsAClearUsageError(t *testing.T) {
	r := sema(t, t.TempDir(), nil, "", "run", "hello")
	if r.code != 2 || !strings.Contains(r.stderr, "ANTHROPIC_API_KEY") || !strings.Contains(r.stderr, "config.model_missing") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	script := writeScript(t, `{"turns":[{"text":"hi"}]}`)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad mode", []string{"run", "--model", "scripted/" + script, "--permission-mode", "yolo", "x"}, "config.permission_mode_invalid"},
		{"bad format", []string{"run", "--model", "scripted/" + script, "--output-format", "xml", "x"}, "config.output_format_invalid"},
		{"unknown flag", []string{"run", "--frobnicate", "x"}, "unknown flag"},
		{"unknown provider", []string{"run", "--model", "acme/big", "x"}, "config.model_invalid"},
		{"fork without session", []string{"run", "--model", "scripted/" + script, "--fork-session", "x"}, "--fork-session needs"},
		{"bad on-ask", []string{"run", "--model", "scripted/" + script, "--on-ask", "maybe", "x"}, "config.on_ask_invalid"},
		{"missing cwd", []string{"run", "--model", "scripted/" + script, "--cwd", "/nonexistent/dir", "x"}, "config.root_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sema(t, t.TempDir(), nil, "", c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, c.want)
			}
		})
	}
}

func TestJSONOutputAndExitCodes(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	script := writeScript(t, `{"turns":[
		{"text":"reading","tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]},
		{"text":"a.txt says alpha"}]}`)
	r := sema(t, dir, nil, "", "-p", "what is in a.txt?", "--model", "scripted/"+script, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	obj := jsonResult(t, r.stdout)
	if obj["type"] != "result" || obj["status"] != "completed" || obj["result"] != "a.txt says alpha" || obj["num_turns"] != 2.0 {
		t.Fatalf("result object %v", obj)
	}
	for _, k := range []string{"session_id", "usage", "permission_denials", "edited_files", "manifest", "notices"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}

	// The turn limit exits 4 with status max_turns.
	loop := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]}]}`)
	r = sema(t, dir, nil, "", "run", "--model", "scripted/"+loop, "--max-turns", "1", "--output-format", "json", "go")
	if r.code != 4 || jsonResult(t, r.stdout)["status"] != "max_turns" {
		t.Fatalf("exit %d stdout %s", r.code, r.stdout)
	}

	// A model error exits 1 with status error and the code.
	bad := writeScript(t, `{"turns":[{"error":{"code":"model.overloaded","message":"the model is overloaded; try again later"}}]}`)
	r = sema(t, dir, nil, "", "run", "--model", "scripted/"+bad, "--output-format", "json", "go")
	obj = jsonResult(t, r.stdout)
	if r.code != 1 || obj["status"] != "error" || obj["error"].(map[string]any)["code"] != "model.overloaded" {
		t.Fatalf("exit %d stdout %s", r.code, r.stdout)
	}
}

func TestStreamJSONAndStdinPrompt(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	script := writeScript(t, `{"turns":[
		{"text":"reading","tool_calls":[{"name":"Read","input":{"file_path":"a.txt"}}]},
		{"text":"done"}]}`)
	r := sema(t, dir, nil, "from stdin", "run", "--model", "scripted/"+script, "--output-format", "stream-json", "-")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	evs := streamEvents(t, r.stdout)
	var types []string
	for _, e := range evs {
		types = append(types, e["type"].(string))
	}
	want := "system assistant tool_use tool_result assistant result"
	if strings.Join(types, " ") != want {
		t.Fatalf("event types %v, want %s", types, want)
	}
	if evs[0]["subtype"] != "init" {
		t.Fatalf("first event %v", evs[0])
	}
	res := evs[3]
	if res["is_error"] != false || !strings.Contains(res["content"].(string), "alpha") {
		t.Fatalf("tool_result %v", res)
	}
	b, _ := json.Marshal(evs[0]["manifest"])
	if !strings.Contains(string(b), `"root"`) {
		t.Fatalf("manifest %s", b)
	}
}
