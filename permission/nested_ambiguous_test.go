package permission

import (
	"path/filepath"
	"strings"
	"testing"
)

// A script nested in a command (bash -c, eval, env -S) whose text bash may read
// differently from the analyzer runs commands nobody can name: under a deny rule it is
// a question, never an allow. Each spelling really runs touch under plain bash.
func TestNestedAmbiguousScriptIsNeverAllowedUnderADenyRule(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	deny := l.gate(ModeBypassPermissions, mustRules(t, []string{"Bash"}, []string{"Bash(touch *)"}, nil))
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
		if d := l.decideBash(deny, cmd); d.Behavior == Allow {
			t.Errorf("deny Bash(touch *): %q was allowed: %+v", cmd, d)
		}
	}
}
