package gate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
	"github.com/sema-agent/sema/shellscan"
)

// calibrate runs cmd with a plain bash in dir and reports whether marker exists afterwards:
// the proof that a hostile spelling really has the effect the gate must not allow.
func calibrate(t *testing.T, dir, cmd, marker string) bool {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed, so the spellings cannot be calibrated: " + err.Error())
	}
	c := exec.Command(bash, "--noprofile", "--norc", "-c", cmd)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	_ = c.Run() // several spellings end with an error after the effect
	_, err = os.Stat(marker)
	return err == nil
}

// TestAllowRulesNeverApproveEvaluatedCode: a prefix allow rule names words; it never
// approves a segment whose words bash evaluates as code. Each spelling creates the marker
// under plain bash (calibration) and is not allowed by the gate; the analyzer's one
// judgement (Script.EvaluatesCode) reports every one of them.
func TestAllowRulesNeverApproveEvaluatedCode(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	g := l.gate(permission.ModeDefault, mustRules(t, []string{
		"Bash(echo *)", "Bash(printf *)", "Bash(read *)", "Bash(test *)", "Bash(declare *)",
		"Bash(set *)", "Bash(command *)", "Bash(mapfile *)", "Bash(true)",
	}, nil, nil))
	// M is replaced by the marker's path.
	spellings := []string{
		`for x in 'a[$(touch M)]'; do echo $((x)); done`,
		`for x in 'a[$(touch M)]'; do echo $[x]; done`,
		`[[ 1 -eq 'a[$(touch M)]' ]]; echo done`,
		`for x in 'a[$(touch M)]'; do [[ $x -eq 1 ]]; echo; done`,
		`for x in 'a[$(touch M)]'; do (( x )); echo; done`,
		`printf -v 'a[$(touch M)]' x`,
		`command printf -v 'a[$(touch M)]' x`,
		`echo hi | read 'a[$(touch M)]'`,
		`test -v 'a[$(touch M)]'`,
		`declare -i x='a[$(touch M)]'`,
		`declare 'a[$(touch M)]=1'`,
		`command let 'a[$(touch M)]'`,
		`for x in 'a[$(touch M)]'; do echo ${!x}; done`,
		`for x in '$(touch M)'; do echo ${x@P}; done`,
		`for x in 'a[$(touch M)]'; do echo ${x:x}; done`,
		`for x in 'a[$(touch M)]'; do echo ${a[$x]}; done`,
		`for PS4 in '$(touch M)'; do set -x; echo; done`,
		`echo hi | mapfile -C 'touch M #' -c 1`,
		`for x in 'a[$(touch M)]'; do echo $((x)) | true; done`,
	}
	if len(spellings) < 10 {
		t.Fatalf("only %d spellings", len(spellings))
	}
	for _, tmpl := range spellings {
		dir := t.TempDir()
		marker := filepath.Join(dir, "marker")
		cmd := strings.ReplaceAll(tmpl, "M", marker)
		if !calibrate(t, dir, cmd, marker) {
			t.Errorf("calibration: %q did not create the marker under bash; the case proves nothing", cmd)
		}
		if d := l.decideBash(g, cmd); d.Behavior == permission.Allow {
			t.Errorf("allow rules approved %q, which bash evaluates as code: %+v", cmd, d)
		}
		s, err := shellscan.Parse(cmd)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		if _, ok := s.EvaluatesCode(); !ok {
			t.Errorf("Script.EvaluatesCode missed %q", cmd)
		}
		if shellscan.ReadOnly(s, []string{"echo", "printf", "read", "test", "declare", "let", "set", "command", "mapfile", "true"}).OK {
			t.Errorf("ReadOnly proved %q read-only", cmd)
		}
	}
	// The rules still do what they are for.
	for _, cmd := range []string{`echo $((1 + 2))`, `printf '%s\n' "$HOME"`, `for f in a b; do echo $f; done`, `test -f x`, `test 1 -eq 2`, `[[ -f x ]] && echo ok`} {
		if d := l.decideBash(g, cmd); d.Behavior != permission.Allow {
			t.Errorf("%q = %+v, want allowed", cmd, d)
		}
	}
}

// TestRestrictiveRulesSeeThroughIndirection: a deny rule on touch catches touch behind
// every indirection, and a command whose program cannot be known is a question (denied
// when nobody can answer it), never an allow; an ask rule is treated the same way. Each
// spelling really runs touch under plain bash (calibration).
func TestRestrictiveRulesSeeThroughIndirection(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deny := l.gate(permission.ModeBypassPermissions, mustRules(t, []string{"Bash"}, []string{"Bash(touch *)"}, nil))
	ask := l.gate(permission.ModeDefault, mustRules(t, []string{"Bash"}, nil, []string{"Bash(touch *)"}))
	dontAsk := l.gate(permission.ModeDontAsk, mustRules(t, []string{"Bash"}, []string{"Bash(touch *)"}, nil))
	// M is replaced by the marker's path, D by the case's directory. want is the deny
	// gate's verdict: "deny" when touch is named through the indirection, "ask!" when the
	// program cannot be known.
	cases := []struct{ cmd, want string }{
		{`bash -c 'touch M'`, "deny"},
		{`sh -c "bash -c 'touch M'"`, "deny"},
		{`bash -c -e 'touch M'`, "deny"},
		{`bash -o errexit -c 'touch M'`, "deny"},
		{`eval 'touch M'`, "deny"},
		{`bash -c "eval 'touch M'"`, "deny"},
		{`env -S 'touch M'`, "deny"},
		{`env --split-string='touch M'`, "deny"},
		{`env -i -S'touch M'`, "deny"},
		{`find D -maxdepth 0 -exec touch M \;`, "deny"},
		{`find D -maxdepth 0 -execdir touch M {} +`, "deny"},
		{`echo M | xargs touch`, "deny"},
		{`echo M | xargs -I{} bash -c 'touch {}'`, "deny"},
		{`timeout 5 touch M`, "deny"},
		{`nice -n 1 touch M`, "deny"},
		{`nohup touch M`, "deny"},
		{`command touch M`, "deny"},
		{`exec touch M`, "deny"},
		{`time touch M`, "deny"},
		{`stdbuf -o0 touch M`, "deny"},
		{`env A=1 timeout 5 nice touch M`, "deny"},
		{`\touch M`, "deny"},
		{`trap 'touch M' EXIT`, "deny"},
		{`x=touch; $x M`, "ask!"},
		{`$(echo touch) M`, "ask!"},
		{`c=touch; "${c}" M`, "ask!"},
		{`eval "$(echo touch) M"`, "ask!"},
		{`c='touch M'; bash -c "$c"`, "ask!"},
		{`echo 'touch M' | bash`, "ask!"},
		{`for x in 'a[$(touch M)]'; do echo $((x)); done`, "ask!"},
		{`for x in 'a[$(touch M)]'; do [[ $x -eq 1 ]]; done`, "ask!"},
		{`c=touch; env -S "$c M"`, "ask!"},
		{`a=-exec; find D -maxdepth 0 $a touch M \;`, "ask!"},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		marker := filepath.Join(dir, "marker")
		cmd := strings.ReplaceAll(strings.ReplaceAll(tc.cmd, "M", marker), "D", dir)
		if !calibrate(t, dir, cmd, marker) {
			t.Errorf("calibration: %q did not run touch under bash; the case proves nothing", cmd)
		}
		d := l.decideBash(deny, cmd)
		if got := verdict(d); got != tc.want {
			t.Errorf("deny Bash(touch *): %q = %s (%s), want %s", cmd, got, d.Reason, tc.want)
		}
		if d := l.decideBash(ask, cmd); d.Behavior != permission.Ask {
			t.Errorf("ask Bash(touch *): %q = %+v, want a question", cmd, d)
		}
		// Where nobody can answer the question (dontAsk, --on-ask deny, no approver), the
		// answer is a refusal.
		call := l.bashCall(cmd, false)
		d = dontAsk.Decide(context.Background(), call)
		if d.Behavior == permission.Ask {
			d = dontAsk.Answer(context.Background(), call, d, nil, nil, nil)
		}
		if d.Behavior != permission.Deny {
			t.Errorf("dontAsk with deny Bash(touch *): %q = %+v, want deny", cmd, d)
		}
	}
	// Commands whose programs are all known and not touch still run.
	for _, cmd := range []string{"ls", "bash -c 'ls'", "find . -name x -exec grep y {} +", "echo a | xargs echo", "eval 'echo hi'", "env -S 'echo hi'", "git status"} {
		if d := l.decideBash(deny, cmd); d.Behavior != permission.Allow {
			t.Errorf("%q = %+v, want allowed", cmd, d)
		}
	}
}
