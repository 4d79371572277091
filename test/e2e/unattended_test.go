package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestUnattendedNeverWaits: a run with no one to ask — no terminal, no --on-ask — never
// waits for input: every path that could prompt resolves by the run's policy (denied),
// the run goes on to its end, and its result says what was decided. Each case: a write
// question in the default mode; the plan review of ExitPlanMode in plan mode; a
// PreToolUse hook that asks; a command outside the read roots. Each run must end well
// inside the harness's minute (a run that waited would be killed by it).
func TestUnattendedNeverWaits(t *testing.T) {
	hook := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"a person must look\"}}'"}]}]}}`
	for _, c := range []struct {
		name  string
		tree  map[string]string
		turns string
		args  []string
		tool  string
		says  string // in the denial's reason
	}{
		{"write question", nil, `{"tool_calls":[{"name":"Write","input":{"file_path":"out.txt","content":"x"}}]}`, nil, "Write", "Nobody is available to approve it"},
		{"plan review", nil, `{"tool_calls":[{"name":"ExitPlanMode","input":{"plan":"1. do it"}}]}`, []string{"--permission-mode", "plan"}, "ExitPlanMode", "park the run (--on-ask park)"},
		{"hook asks", map[string]string{".sema/settings.json": hook}, `{"tool_calls":[{"name":"Bash","input":{"command":"true"}}]}`, []string{"--trust-project", "--allowed-tools", "Bash(true)"}, "Bash", "A PreToolUse hook asks: a person must look"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := map[string]string{"keep.txt": "x\n"}
			for k, v := range c.tree {
				tree[k] = v
			}
			dir := writeTree(t, tree)
			script := writeScript(t, `{"turns":[`+c.turns+`,{"text":"went on"}]}`)
			start := time.Now()
			args := append([]string{"-p", "--model", "scripted/" + script, "--sandbox", "off", "--output-format", "json"}, c.args...)
			r := sema(t, dir, []string{"SEMA_HOME=" + t.TempDir()}, "", append(args, "do the thing")...)
			took := time.Since(start)
			if r.code != 0 {
				t.Fatalf("exit %d after %v\n%s\n%s", r.code, took, r.stdout, r.stderr)
			}
			res := jsonResult(t, r.stdout)
			denials, _ := res["permission_denials"].([]any)
			if res["status"] != "completed" || res["result"] != "went on" || len(denials) != 1 {
				t.Fatalf("status %v, result %v, denials %v; want the question refused and the run on", res["status"], res["result"], denials)
			}
			d := denials[0].(map[string]any)
			if reason, _ := d["reason"].(string); d["tool_name"] != c.tool || !strings.Contains(reason, c.says) {
				t.Fatalf("the denial %v; want the %s call refused saying %q", d, c.tool, c.says)
			}
			if took > 30*time.Second {
				t.Fatalf("the run took %v: something waited", took)
			}
		})
	}
}
