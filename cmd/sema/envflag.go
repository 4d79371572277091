package main

import (
	"slices"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/env"
)

// applyEnvPassthrough adds --env-passthrough to the deployment's pass-through list
// (Deps.Shell.EnvPassthrough). An entry that is no variable name, or that names a model
// provider's key, is refused by name with its own code (exit 2).
func (o *runOptions) applyEnvPassthrough(deps *agent.Deps) error {
	if len(o.envPassthrough) == 0 {
		return nil
	}
	if err := o.checkEnvPassthrough(); err != nil {
		return err
	}
	var sh agent.ShellOptions
	if deps.Shell != nil {
		sh = *deps.Shell
	}
	sh.EnvPassthrough = append(slices.Clip(sh.EnvPassthrough), o.envPassthrough...)
	deps.Shell = &sh
	return nil
}

// checkEnvPassthrough refuses an invalid --env-passthrough before anything is opened.
func (o *runOptions) checkEnvPassthrough() error {
	if _, err := env.ParsePassthrough(o.envPassthrough, "--env-passthrough"); err != nil {
		return usageErr(err)
	}
	return nil
}
