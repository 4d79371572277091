// Package roster keeps a leg's tool roster as each call finds it — the tools mounted
// when the leg was prepared, then its MCP servers' tools as they are now — and reads the
// effect a deployment declares for a tool.
package roster

import (
	"strings"
	"sync"

	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/tools"
)

// Live is a leg's roster as a call finds it. A name mounted twice dispatches to its
// last instance (an MCP server's tools come after the engine's and the deployment's, and
// a later server's after an earlier one's), and the model is offered each name once. The
// zero value is ready; it is safe for concurrent use.
type Live struct {
	mu    sync.Mutex
	gen   uint64
	ready bool
	cur   tools.Roster
	specs []model.ToolSpec
}

// At returns the roster at generation gen and the specs the model is offered. gen moves
// on whenever a server's tool list changed; then, and at the first call, mount is asked
// for every tool in mounting order, under the roster's lock.
func (lr *Live) At(gen uint64, mount func() tools.Roster) (tools.Roster, []model.ToolSpec) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.ready && lr.gen == gen {
		return lr.cur, lr.specs
	}
	cur := lastOfEach(mount())
	specs := make([]model.ToolSpec, 0, len(cur))
	for _, t := range cur {
		specs = append(specs, t.Spec().ModelSpec())
	}
	lr.cur, lr.specs, lr.gen, lr.ready = cur, specs, gen, true
	return cur, specs
}

// lastOfEach keeps the last instance of each name, in the order of those instances.
func lastOfEach(all tools.Roster) tools.Roster {
	cur := make(tools.Roster, 0, len(all))
	for i, t := range all {
		name := t.Spec().Name
		later := false
		for _, u := range all[i+1:] {
			if u.Spec().Name == name {
				later = true
				break
			}
		}
		if !later {
			cur = append(cur, t)
		}
	}
	return cur
}

// Effects are the effects a deployment declares for tools, by a tool's name
// ("mcp__server__tool") or for a whole MCP server ("mcp__server"). A declared effect
// outranks a tool's own, and a server's read-only hint.
type Effects map[string]tools.Effect

// Declared is the effect declared for the tool name, by its name or its MCP server's.
func (e Effects) Declared(name string) (tools.Effect, bool) {
	if eff, ok := e[name]; ok {
		return eff, true
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if server, _, ok := strings.Cut(rest, "__"); ok {
			eff, ok := e["mcp__"+server]
			return eff, ok
		}
	}
	return "", false
}

// Of is a tool's effect as the runner reads it for concurrency and for a read-only leg:
// the declared one, else the tool's own.
func (e Effects) Of(t tools.Tool) tools.Effect {
	if eff, ok := e.Declared(t.Spec().Name); ok {
		return eff
	}
	return t.Spec().Effect
}
