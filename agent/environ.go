package agent

import (
	"github.com/sema-agent/sema/env"
	"github.com/sema-agent/sema/internal/envscrub"
)

// validateEnvPassthrough is the door's part for Deps.Shell.EnvPassthrough: an entry that
// is no variable name, or that names a model provider's key, is refused by name.
func validateEnvPassthrough(deps *Deps) error {
	_, err := env.ParsePassthrough(deps.shell().EnvPassthrough, "Deps.Shell.EnvPassthrough")
	return err
}

// envPassthrough is the leg's pass-through list (envscrub.Passthrough).
func (l *leg) envPassthrough() []string {
	return envscrub.Passthrough(l.deps.shell().EnvPassthrough, l.layered.EnvPassthrough)
}

// envHeld names the variables of this process's environment the leg's programs do not
// inherit (envscrub.Held).
func (l *leg) envHeld() env.Inheritance {
	return envscrub.Held(l.deps.Env, l.envPassthrough())
}

// announceEnv says once, at the start of a leg, right after its manifest (a delegated
// child's parent said it already), which variables its programs do not inherit.
func (l *leg) announceEnv() {
	if l.link != nil {
		return
	}
	if n, ok := envscrub.Notice(l.envHeld()); ok {
		l.notice(n)
	}
}
