package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sema-agent/sema/permission"
)

// A script nested in a command (bash -c, eval, env -S) whose text bash may read
// differently from the analyzer runs commands nobody can name: under a deny rule it is
// a question, never an allow. Each spelling really runs touch under plain bash.
func TestNestedAmbiguousScriptIsNeverAllowedUnderADenyRule(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deny := l.gate(permission.ModeBypassPermissions, mustRules(t, []string{"Bash"}, []string{"Bash(touch *)"}, nil))
	for _, tmpl := range []string{
		`bash -c $'tou\\\nch M'`,
		`sh -c $'t\\\nouch M'`,
		`bash -c "$(printf 'tou\\\nch M')"`,
		`eval $'tou\\\nch M'`,
		`bash -c $'touch M \r'`,
	} {
		dir := t.TempDir()
		marker := filepath.Join(dir, "marker")
		cmd := strings.ReplaceAll(tmpl, "M", marker)
		if !calibrate(t, dir, cmd, marker) {
			t.Errorf("calibration: %q did not run touch under bash", cmd)
		}
		if d := l.decideBash(deny, cmd); d.Behavior == permission.Allow {
			t.Errorf("deny Bash(touch *): %q was allowed: %+v", cmd, d)
		}
	}
}

// A nested script bash may read differently from its parse may remove anything: the
// delete guard makes it a person's question in every mode, bypassPermissions included.
func TestNestedAmbiguousScriptFacesTheDeleteGuard(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	for _, tmpl := range []string{`bash -c $'r\\\nm -rf D'`, `eval $'r\\\nm -rf D'`, `sh -c $'rm -r\\\nf D'`} {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		if err := os.Mkdir(victim, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := strings.ReplaceAll(tmpl, "D", victim)
		calibrate(t, dir, cmd, victim)
		if _, err := os.Stat(victim); err == nil {
			t.Errorf("calibration: %q did not remove the directory under bash", cmd)
		}
		for _, m := range []permission.Mode{permission.ModeBypassPermissions, permission.ModeAcceptEdits} {
			if d := l.decideBash(l.gate(m, mustRules(t, []string{"Bash"}, nil, nil)), cmd); verdict(d) != "ask!" {
				t.Errorf("%s: %q = %+v, want a person-only question", m, cmd, d)
			}
		}
	}
}
