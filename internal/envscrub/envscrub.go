// Package envscrub decides what of sema's own environment a leg's programs — commands,
// hooks, stdio MCP servers — inherit: the pass-through list its layers name, the
// variables held back from them, and the notice that says which (names only, never
// values).
package envscrub

import (
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/env"
)

// Passthrough is a leg's pass-through list: the deployment's, then the names the applied
// settings files add (an untrusted workspace's file adds nothing, see package settings).
// Every program the leg starts inherits sema's environment through env.Inherit with it.
func Passthrough(deployment, settings []string) []string {
	out := slices.Clip(deployment)
	for _, n := range settings {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Held names the variables of this process's environment the programs of a leg in e do
// not inherit; none when e is not the host (another env's programs start from that env's
// environment, not this process's).
func Held(e env.ExecutionEnv, passthrough []string) env.Inheritance {
	if _, ok := e.(*env.Host); !ok {
		return env.Inheritance{}
	}
	environ := os.Environ()
	held.Lock()
	defer held.Unlock()
	if !held.valid || !slices.Equal(environ, held.environ) || !slices.Equal(passthrough, held.pass) {
		// The list was checked at the door and in the settings files.
		pass, _ := env.ParsePassthrough(passthrough, "")
		held.environ, held.pass, held.in, held.valid = environ, slices.Clone(passthrough), env.Inherit(environ, pass), true
	}
	return env.Inheritance{Env: slices.Clone(held.in.Env), Held: slices.Clone(held.in.Held), Why: maps.Clone(held.in.Why)}
}

// held remembers the last answer of Held: this process's environment rarely changes
// between two legs (a service starts thousands), and judging every variable again cost
// each leg a tenth of a millisecond. The answer is handed out as a copy.
var held struct {
	sync.Mutex
	valid         bool
	environ, pass []string
	in            env.Inheritance
}

// Notice says which variables a leg's programs do not inherit; false when none is held.
func Notice(in env.Inheritance) (sema.Notice, bool) {
	if len(in.Held) == 0 {
		return sema.Notice{}, false
	}
	why := make(map[string]any, len(in.Why))
	for n, r := range in.Why {
		why[n] = string(r)
	}
	return sema.Notice{Code: env.CodeEnvScrubbed,
		Message: "commands, hooks and MCP servers do not inherit " + strings.Join(in.Held, ", ") +
			" from sema's environment (a model provider's key, or a credential-shaped name, value or agent socket); " +
			"pass one through by name with envPassthrough in a settings file or --env-passthrough NAME (a provider's key never is)",
		Detail: map[string]any{"held": in.Held, "why": why}}, true
}
