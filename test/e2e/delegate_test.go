package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The delegation acceptance run through the binary: a parent in default spawns two
// Explore children and one general-purpose child in one turn; the general-purpose
// child's Write asks, and with --on-ask park the run parks naming the child; `sema
// approve` in another process resumes the child, then the parent; the final result
// lists the child's edit.
func TestDelegationParksNamingTheChildAndApproveResumesChildThenParent(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	env := home(t)
	script := writeScript(t, `{
	  "turns": [
	    {"text": "delegating", "tool_calls": [
	      {"id": "task_a", "name": "Task", "input": {"description": "read a", "prompt": "EXPLORE-A: what does a.txt say?", "subagent_type": "Explore"}},
	      {"id": "task_b", "name": "Task", "input": {"description": "look for b", "prompt": "EXPLORE-B: is there a b.txt?", "subagent_type": "Explore"}},
	      {"id": "task_c", "name": "Task", "input": {"description": "write notes", "prompt": "GP-C: write notes.txt", "subagent_type": "general-purpose"}}]},
	    {"text": "all three agents reported"}],
	  "threads": [
	    {"match": "EXPLORE-A", "turns": [
	      {"tool_calls": [{"name": "Read", "input": {"file_path": "a.txt"}}]},
	      {"text": "a.txt says alpha"}]},
	    {"match": "EXPLORE-B", "turns": [{"text": "no b.txt"}]},
	    {"match": "GP-C", "turns": [
	      {"tool_calls": [{"name": "Write", "input": {"file_path": "notes.txt", "content": "notes\n"}}]},
	      {"text": "notes.txt written"}]}]}`)
	r := sema(t, dir, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "--output-format", "stream-json", "delegate the work")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (awaiting approval)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := streamEvents(t, r.stdout)
	starts, childEvents := 0, 0
	for _, ev := range evs {
		if ev["type"] == "subagent_start" {
			starts++
		}
		if ev["parent_tool_use_id"] != nil {
			childEvents++
		}
	}
	res := evs[len(evs)-1]
	cp := res["checkpoint"].(map[string]any)
	sub, _ := cp["subagent"].(map[string]any)
	if starts != 3 || childEvents == 0 || res["status"] != "awaiting_approval" || cp["tool"] != "Write" || sub == nil || sub["type"] != "general-purpose" {
		t.Fatalf("parked run: %d starts, %d child events, result %v", starts, childEvents, res)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); !os.IsNotExist(err) {
		t.Fatal("the child's write ran before approval")
	}
	sid, cid := res["session_id"].(string), cp["id"].(string)

	// The answer, in another process and directory, with the script's remaining turns.
	after := writeScript(t, `{"turns": [{"text": "all three agents reported"}],
	  "threads": [{"match": "GP-C", "turns": [{"text": "notes.txt written"}]}]}`)
	r = sema(t, t.TempDir(), env, "", "approve", sid, "--checkpoint", cid, "--allow", "--model", "scripted/"+after, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("approve exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := jsonResult(t, r.stdout)
	if got["status"] != "completed" || got["result"] != "all three agents reported" {
		t.Fatalf("after approve: %v", got)
	}
	edited, _ := got["edited_files"].([]any)
	if len(edited) != 1 || !strings.HasSuffix(edited[0].(string), "/notes.txt") {
		t.Fatalf("edited_files %v", got["edited_files"])
	}
	subs, _ := got["subagents"].([]any)
	if len(subs) != 1 || subs[0].(map[string]any)["type"] != "general-purpose" {
		t.Fatalf("subagents %v", got["subagents"])
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "notes\n" {
		t.Fatalf("notes.txt = %q", b)
	}
	// The parent's session lists its three agents.
	r = sema(t, dir, env, "", "sessions", "show", sid)
	if r.code != 0 || strings.Count(r.stdout, "\nagent   ") != 3 {
		t.Fatalf("sessions show: exit %d\n%s", r.code, r.stdout)
	}
	// Text mode names the child in the parked line.
	fresh := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	r = sema(t, fresh, env, "", "run", "--model", "scripted/"+script, "--on-ask", "park", "delegate again")
	if r.code != 3 || !strings.Contains(r.stderr, "asked by the general-purpose agent") || !strings.Contains(r.stderr, "agent Explore started") {
		t.Fatalf("text mode: exit %d\n%s", r.code, r.stderr)
	}
}
