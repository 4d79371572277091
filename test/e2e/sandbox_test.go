package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema/sandbox"
)

// An allow rule grants a command, never a way out of the roots: a program the analysis
// cannot see into (python) writes outside the root and into .git/hooks. With the sandbox
// off the writes happen (the calibration); with it on they do not, and the run goes on.
func TestAllowedCommandStaysInsideTheSandbox(t *testing.T) {
	if !sandbox.Probe().Available() {
		t.Skipf("no kernel sandbox on this machine: %s", sandbox.Probe().Reason)
	}
	for _, mode := range []string{"off", "on"} {
		t.Run("sandbox "+mode, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"a.txt": "alpha\n", ".git/hooks/README": "hooks\n"})
			outside := filepath.Join(t.TempDir(), "outside.txt")
			hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
			// Each write is tried on its own, so the second is attempted whatever the first did.
			py := "for p in (" + strconv.Quote(outside) + ", " + strconv.Quote(hook) + "):\n" +
				"    try: open(p, 'w').write('x')\n" +
				"    except OSError as e: print('FAILED', p, type(e).__name__, e)"
			input, _ := json.Marshal("python3 -c " + shellQuote(py))
			script := writeScript(t, `{"turns":[
				{"tool_calls":[{"name":"Bash","input":{"command":`+string(input)+`}}]},
				{"text":"done"}]}`)
			r := sema(t, dir, home(t), "", "run", "--model", "scripted/"+script, "--sandbox", mode,
				"--allowed-tools", "Bash(python3:*)", "--on-ask", "deny", "--output-format", "stream-json", "go")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			_, errOut := os.Stat(outside)
			_, errHook := os.Stat(hook)
			var sb map[string]any
			for _, e := range streamEvents(t, r.stdout) {
				if e["type"] == "system" {
					sb = e["manifest"].(map[string]any)["shell"].(map[string]any)["sandbox"].(map[string]any)
				}
			}
			if mode == "off" {
				// Unconfined, both writes happen; the hook is then put back by the walk
				// around the command, which names it.
				if errOut != nil || !strings.Contains(r.stdout, "sandbox.protected_reverted") || !strings.Contains(r.stdout, hook) {
					t.Fatalf("calibration: unconfined python did not write both files (%v)\n%s", errOut, r.stdout)
				}
				if errHook == nil {
					t.Fatalf("the hook an unapproved command wrote was not put back\n%s", r.stdout)
				}
				if sb["sandboxed"] != false {
					t.Fatalf("manifest says sandboxed with --sandbox off: %v", sb)
				}
				return
			}
			if errOut == nil || errHook == nil {
				t.Fatalf("a confined command wrote outside the root or into .git/hooks (outside: %v, hook: %v)", errOut == nil, errHook == nil)
			}
			if sb["sandboxed"] != true || sb["mode"] != "on" {
				t.Fatalf("manifest sandbox %v", sb)
			}
			// Both refusals reach the model: the outside path does not exist in the
			// command's view (or is refused), the hook is on a read-only mount.
			for _, p := range []string{outside, hook} {
				if !strings.Contains(r.stdout, `FAILED `+p) {
					t.Fatalf("the failure to write %s did not reach the model:\n%s", p, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "sandbox.protected_reverted") {
				t.Fatalf("the kernel should have refused the hook's write, leaving nothing to put back:\n%s", r.stdout)
			}
		})
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
