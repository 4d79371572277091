package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// A child agent's refused calls are in the parent's permission_denials, through the
// binary's --output-format json and stream-json, each marked with the child it came from
// (subagent: the parent's Task call, the agent type, the child's session).
func TestChildDenialsInTheParentsPermissionDenials(t *testing.T) {
	t.Parallel()
	script := writeScript(t, `{
	  "turns": [
	    {"text": "delegating", "tool_calls": [
	      {"id": "task_w", "name": "Task", "input": {"description": "write notes", "prompt": "GP-W: write notes.txt", "subagent_type": "general-purpose"}},
	      {"id": "task_b", "name": "Task", "input": {"description": "clean up", "prompt": "GP-B: remove the build", "subagent_type": "general-purpose"}}]},
	    {"text": "both agents reported"}],
	  "threads": [
	    {"match": "GP-W", "turns": [
	      {"tool_calls": [{"id": "child_write", "name": "Write", "input": {"file_path": "notes.txt", "content": "notes\n"}}]},
	      {"text": "could not write"}]},
	    {"match": "GP-B", "turns": [
	      {"tool_calls": [{"id": "child_rm", "name": "Bash", "input": {"command": "rm -rf build"}}]},
	      {"text": "could not remove"}]}]}`)
	for _, format := range []string{"json", "stream-json"} {
		dir := writeTree(t, map[string]string{"build/x": "x\n"})
		// No terminal: a question is answered no (--on-ask deny), and the rule refuses rm.
		r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--disallowed-tools", "Bash(rm:*)", "--output-format", format, "delegate")
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", format, r.code, r.stdout, r.stderr)
		}
		res := map[string]any{}
		if format == "json" {
			res = jsonResult(t, r.stdout)
		} else {
			evs := streamEvents(t, r.stdout)
			res = evs[len(evs)-1]
		}
		if res["status"] != "completed" {
			t.Fatalf("%s: result %v", format, res)
		}
		if _, err := os.Stat(filepath.Join(dir, "notes.txt")); !os.IsNotExist(err) {
			t.Fatalf("%s: notes.txt was written", format)
		}
		if _, err := os.Stat(filepath.Join(dir, "build", "x")); err != nil {
			t.Fatalf("%s: the build was removed: %v", format, err)
		}
		sessions := map[string]any{}
		for _, s := range res["subagents"].([]any) {
			s := s.(map[string]any)
			sessions[s["tool_use_id"].(string)] = s["session_id"]
		}
		want := map[string][2]string{"child_write": {"Write", "task_w"}, "child_rm": {"Bash", "task_b"}}
		denials, _ := res["permission_denials"].([]any)
		if len(denials) != len(want) {
			t.Fatalf("%s: permission_denials %v, want the two children's calls", format, res["permission_denials"])
		}
		for _, d := range denials {
			d := d.(map[string]any)
			w, ok := want[d["tool_use_id"].(string)]
			sub, _ := d["subagent"].(map[string]any)
			if !ok || d["tool"] != w[0] || d["code"] != "permission.denied" || sub == nil || sub["tool_use_id"] != w[1] ||
				sub["type"] != "general-purpose" || sub["session_id"] == "" || sub["session_id"] != sessions[w[1]] {
				t.Errorf("%s: denial %v", format, d)
			}
			delete(want, d["tool_use_id"].(string))
		}
	}
}

// The same through the Agent SDK protocol: the result's permission_denials (tool_name,
// tool_use_id, tool_input) lists the child's refused call, with sema's subagent member.
func TestSDKChildDenialsInTheParentsPermissionDenials(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"build/x": "x\n"})
	script := writeScript(t, `{
	  "turns": [
	    {"tool_calls": [{"id": "task_b", "name": "Task", "input": {"description": "clean up", "prompt": "GP-B: remove the build", "subagent_type": "general-purpose"}}]},
	    {"text": "the agent reported"}],
	  "threads": [
	    {"match": "GP-B", "turns": [
	      {"tool_calls": [{"id": "child_rm", "name": "Bash", "input": {"command": "rm -rf build"}}]},
	      {"text": "could not remove"}]}]}`)
	p := startSDK(t, dir, home(t), "--model=scripted/"+script, "--disallowedTools", "Bash(rm:*)")
	p.initialize("i", nil)
	p.user("delegate")
	res := p.result()
	denials, _ := res["permission_denials"].([]any)
	if len(denials) != 1 {
		t.Fatalf("permission_denials %v, want the child's Bash call", res["permission_denials"])
	}
	d := denials[0].(map[string]any)
	sub, _ := d["subagent"].(map[string]any)
	input, _ := d["tool_input"].(map[string]any)
	if d["tool_name"] != "Bash" || d["tool_use_id"] != "child_rm" || input["command"] != "rm -rf build" || sub == nil ||
		sub["tool_use_id"] != "task_b" || sub["type"] != "general-purpose" || sub["session_id"] == "" {
		t.Fatalf("denial %v", d)
	}
	if code := p.finish(); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr())
	}
	if _, err := os.Stat(filepath.Join(dir, "build", "x")); err != nil {
		t.Fatalf("the build was removed: %v", err)
	}
}
