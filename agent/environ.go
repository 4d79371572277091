package agent

import (
	"os"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// validateEnvPassthrough is the door's part for Deps.Shell.EnvPassthrough: an entry that
// is no variable name, or that names a model provider's key, is refused by name.
func validateEnvPassthrough(deps *Deps) error {
	_, err := env.ParsePassthrough(deps.shell().EnvPassthrough, "Deps.Shell.EnvPassthrough")
	return err
}

// envPassthrough is the leg's pass-through list: the deployment's, then the applied
// settings files' (an untrusted workspace's file adds nothing, see package settings).
// Every program the leg starts — commands, hooks, stdio MCP servers — inherits sema's
// environment through env.Inherit with it.
func (l *leg) envPassthrough() []string {
	out := slices.Clip(l.deps.shell().EnvPassthrough)
	for _, n := range l.layered.EnvPassthrough {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// envHeld names the variables of this process's environment the leg's programs do not
// inherit; none when the leg's env is not the host (another env's programs start from
// that env's environment, not this process's).
func (l *leg) envHeld() env.Inheritance {
	if _, ok := l.deps.Env.(*env.Host); !ok {
		return env.Inheritance{}
	}
	// The list was checked at the door and in the settings files.
	pass, _ := env.ParsePassthrough(l.envPassthrough(), "")
	return env.Inherit(os.Environ(), pass)
}

// announceEnv says once, at the start of a leg, right after its manifest (a delegated
// child's parent said it already), which variables its programs do not inherit: names
// only, never values.
func (l *leg) announceEnv() {
	if l.link != nil {
		return
	}
	in := l.envHeld()
	if len(in.Held) == 0 {
		return
	}
	why := make(map[string]any, len(in.Why))
	for n, r := range in.Why {
		why[n] = string(r)
	}
	l.notice(sema.Notice{Code: env.CodeEnvScrubbed,
		Message: "commands, hooks and MCP servers do not inherit " + strings.Join(in.Held, ", ") +
			" from sema's environment (a model provider's key, or a credential-shaped name, value or agent socket); " +
			"pass one through by name with envPassthrough in a settings file or --env-passthrough NAME (a provider's key never is)",
		Detail: map[string]any{"held": in.Held, "why": why}})
}
