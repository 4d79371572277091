package gate

import (
	"testing"

	"github.com/sema-agent/sema/permission"
)

// With the kernel confining commands, a write outside the write roots stops being a
// question only a person may answer (the kernel refuses the write whatever the answer),
// so an allow rule or a mode may answer the command. Every question about intent stays.
func TestSandboxChangesOnlyTheOutsideWriteQuestion(t *testing.T) {
	t.Parallel()
	l := newTestLeg(t)
	sandboxedGate := func(mode permission.Mode, rules permission.RuleSet) *Gate {
		g, err := New(Config{Modes: FixedMode(mode), Rules: rules, Resolver: FenceResolver(l.fence), Sandboxed: true})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	outside := l.outside + "/x"
	cpRule := mustRules(t, []string{"Bash(cp:*)", "Bash(tee:*)"}, nil, nil)
	for _, cmd := range []string{"cp a.txt " + outside, "tee " + outside} {
		if d := l.decideBash(l.gate(permission.ModeDefault, cpRule), cmd); verdict(d) != "ask!" {
			t.Errorf("unconfined: %q = %+v, want a person-only question", cmd, d)
		}
		if d := l.decideBash(sandboxedGate(permission.ModeDefault, cpRule), cmd); verdict(d) != "allow" {
			t.Errorf("confined: %q = %+v, want the allow rule's answer", cmd, d)
		}
		if d := l.decideBash(sandboxedGate(permission.ModeDefault, permission.RuleSet{}), cmd); verdict(d) != "ask" {
			t.Errorf("confined, no rule: %q = %+v, want the ordinary question", cmd, d)
		}
	}
	// Questions about intent stay person-only under the sandbox.
	for _, cmd := range []string{
		"rm -rf " + l.root,                  // the delete guard
		"cp a.txt .git/config",              // a protected path
		"echo x > $F",                       // a write that cannot be placed
		"cat " + l.outside + "/secret",      // a read outside the read roots
		"rm -rf ~",                          // the home directory
		"bash -c 'echo x > .git/hooks/pre'", // a protected path behind a shell
	} {
		if d := l.decideBash(sandboxedGate(permission.ModeDefault, mustRules(t, []string{"Bash"}, nil, nil)), cmd); verdict(d) != "ask!" {
			t.Errorf("confined: %q = %+v, want a person-only question", cmd, d)
		}
	}
	// Deny rules still win.
	if d := l.decideBash(sandboxedGate(permission.ModeDefault, mustRules(t, []string{"Bash(cp:*)"}, []string{"Bash(cp:*)"}, nil)), "cp a.txt "+outside); verdict(d) != "deny" {
		t.Errorf("a deny rule under the sandbox = %+v", d)
	}
}
