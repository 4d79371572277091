package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parkEdit runs a leg that reads f.txt and parks at an Edit of it; it returns the
// session and checkpoint ids.
func parkEdit(t *testing.T, dir string, env []string) (sid, cid string) {
	t.Helper()
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Read","input":{"file_path":"f.txt"}}]},
		{"tool_calls":[{"name":"Edit","input":{"file_path":"f.txt","old_string":"world","new_string":"there"}}]}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "--output-format", "json", "edit f.txt")
	if r.code != 3 {
		t.Fatalf("park: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	obj := jsonResult(t, r.stdout)
	return obj["session_id"].(string), obj["checkpoint"].(map[string]any)["id"].(string)
}

func TestReadThenParkThenApprovedEditSucceeds(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "hello world\n"})
	env := home(t)
	sid, cid := parkEdit(t, dir, env)
	after := writeScript(t, `{"turns":[{"text":"edited"}]}`)
	r := sema(t, t.TempDir(), env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+after, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("approve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "hello there\n" {
		t.Fatalf("f.txt = %q", b)
	}
	got := jsonResult(t, r.stdout)
	if a, _ := got["answered"].(map[string]any); a == nil || a["tool"] != "Edit" || a["allowed"] != true || a["is_error"] != false {
		t.Fatalf("answered: %v", got["answered"])
	}
}

func TestResumeEditOfAFileChangedSinceItWasRead(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "hello world\n"})
	env := home(t)
	read := writeScript(t, `{"turns":[{"tool_calls":[{"name":"Read","input":{"file_path":"f.txt"}}]},{"text":"read it"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+read, "--output-format", "json", "read f.txt")
	if r.code != 0 {
		t.Fatalf("read leg: exit %d\n%s", r.code, r.stderr)
	}
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	// A person edits the file between the legs; the model's old_string is still there.
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("hello world\nand a line a person added\n"), 0o644)
	edit := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Edit","input":{"file_path":"f.txt","old_string":"world","new_string":"there"}}]},
		{"text":"tried"}]}`)
	r = sema(t, dir, env, "", "run", "--resume", sid, "--model", "scripted/"+edit, "--permission-mode", "acceptEdits", "--output-format", "stream-json", "now edit it")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var res map[string]any
	for _, ev := range streamEvents(t, r.stdout) {
		if ev["type"] == "tool_result" {
			res = ev
		}
	}
	if res == nil || res["code"] != "fs.changed_since_read" || res["is_error"] != true {
		t.Fatalf("edit after a person's change: %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "hello world\nand a line a person added\n" {
		t.Fatalf("f.txt = %q", b)
	}
}

func TestApproveThenModelFailureSaysTheCallRanAndHowToContinue(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "hello world\n"})
	env := home(t)
	sid, cid := parkEdit(t, dir, env)
	failing := writeScript(t, `{"turns":[{"error":{"code":"model.overloaded","message":"the model is overloaded"}}]}`)
	r := sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+failing)
	if r.code != 1 {
		t.Fatalf("approve: exit %d, want 1 (a model error)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"the approved Edit call ran: The file f.txt has been updated.",
		"model.overloaded",
		"the session is intact",
		"sema run --resume " + sid + ` "…"`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "hello there\n" {
		t.Fatalf("f.txt = %q", b)
	}

	// A second answer runs nothing and says how the first one's leg ended and how to go on.
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("hello world\n"), 0o644)
	r = sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+failing)
	if r.code != 2 || !strings.Contains(r.stderr, "checkpoint.already_claimed") || !strings.Contains(r.stderr, "finished with status error") ||
		!strings.Contains(r.stderr, "sema run --resume "+sid) {
		t.Fatalf("second approve: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "hello world\n" {
		t.Fatal("the approved call ran twice")
	}

	// The command it printed continues the session, the call's result in it.
	done := writeScript(t, `{"turns":[{"text":"all done"}]}`)
	r = sema(t, dir, env, "", "run", "--resume", sid, "--model", "scripted/"+done, "--output-format", "json", "go on")
	if r.code != 0 || jsonResult(t, r.stdout)["result"] != "all done" {
		t.Fatalf("continue: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestApproveThenModelFailureJSON(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "hello world\n"})
	env := home(t)
	sid, cid := parkEdit(t, dir, env)
	failing := writeScript(t, `{"turns":[{"error":{"code":"model.overloaded","message":"the model is overloaded"}}]}`)
	r := sema(t, dir, env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+failing, "--output-format", "json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	obj := jsonResult(t, r.stdout)
	a, _ := obj["answered"].(map[string]any)
	if obj["status"] != "error" || a == nil || a["allowed"] != true || !strings.Contains(a["text"].(string), "updated") ||
		!strings.HasPrefix(obj["continue_with"].(string), "sema run --resume "+sid) {
		t.Fatalf("result %v", obj)
	}
}

func TestSessionsShowMarksFailuresAndShowsRawText(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": "a <tag> & more\n"})
	env := home(t)
	script := writeScript(t, `{"turns":[
		{"tool_calls":[{"name":"Edit","input":{"file_path":"f.txt","old_string":"<tag>","new_string":"<b>"}}]},
		{"tool_calls":[{"name":"Read","input":{"file_path":"f.txt"}}]},
		{"tool_calls":[{"name":"Bash","input":{"command":"echo '<out>'; exit 3"}}]},
		{"text":"done"}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--permission-mode", "acceptEdits", "--allowed-tools", "Bash", "--output-format", "json", "look")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	sid := jsonResult(t, r.stdout)["session_id"].(string)
	r = sema(t, dir, env, "", "sessions", "show", sid)
	if r.code != 0 {
		t.Fatalf("show: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`▸ Edit {"file_path":"f.txt","old_string":"<tag>","new_string":"<b>"}`,
		"✗ f.txt has not been read in this session",
		"✓      1\ta <tag> & more",
		"✗ (exit 3) <out>",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, `\u003c`) || strings.Contains(r.stdout, `\u0026`) {
		t.Errorf("show escapes the text:\n%s", r.stdout)
	}
	r = sema(t, dir, env, "", "sessions", "list")
	if !strings.Contains(r.stdout, "acceptEdits") {
		t.Errorf("list:\n%s", r.stdout)
	}
	// A session that never asked for a mode runs in default, and says so.
	plain := writeScript(t, `{"turns":[{"text":"hi"}]}`)
	other := writeTree(t, map[string]string{})
	sema(t, other, env, "", "run", "--model", "scripted/"+plain, "hi")
	r = sema(t, other, env, "", "sessions", "list")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "default") {
		t.Errorf("list of a session without a mode:\n%s", r.stdout)
	}
}
