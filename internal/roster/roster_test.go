package roster

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/sema-agent/sema/tools"
)

// tool is a named tool of an effect; id tells two instances of a name apart.
type tool struct {
	name, id string
	effect   tools.Effect
}

func (t tool) Spec() tools.Spec {
	return tools.Spec{Name: t.name, Effect: t.effect, InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (t tool) Run(context.Context, json.RawMessage) tools.Result { return tools.Result{} }

func ids(r tools.Roster) []string {
	var out []string
	for _, t := range r {
		out = append(out, t.(tool).id)
	}
	return out
}

// A name mounted twice is its last instance, at that instance's place, and offered once.
func TestLastInstanceWins(t *testing.T) {
	t.Parallel()
	var lr Live
	mounted := tools.Roster{tool{name: "Read", id: "read"}, tool{name: "x", id: "x1"}, tool{name: "Bash", id: "bash"}, tool{name: "x", id: "x2"}}
	r, specs := lr.At(0, func() tools.Roster { return mounted })
	if want := []string{"read", "bash", "x2"}; !slices.Equal(ids(r), want) {
		t.Errorf("roster %v, want %v", ids(r), want)
	}
	if len(specs) != 3 || specs[2].Name != "x" {
		t.Errorf("specs %+v", specs)
	}
}

// The roster is built again only when the generation moved on.
func TestLiveBuildsOncePerGeneration(t *testing.T) {
	t.Parallel()
	var lr Live
	built := 0
	mount := func() tools.Roster { built++; return tools.Roster{tool{name: "t", id: string(rune('0' + built))}} }
	lr.At(1, mount)
	r, _ := lr.At(1, mount)
	if built != 1 || ids(r)[0] != "1" {
		t.Errorf("same generation: built %d times, roster %v", built, ids(r))
	}
	r, _ = lr.At(2, mount)
	if built != 2 || ids(r)[0] != "2" {
		t.Errorf("next generation: built %d times, roster %v", built, ids(r))
	}
}

// A tool's declaration outranks its server's, which outranks the tool's own effect.
func TestEffects(t *testing.T) {
	t.Parallel()
	e := Effects{"mcp__fs": tools.EffectRead, "mcp__fs__write": tools.EffectWrite}
	for _, c := range []struct {
		tool tool
		want tools.Effect
	}{
		{tool{name: "mcp__fs__write", effect: tools.EffectExec}, tools.EffectWrite},
		{tool{name: "mcp__fs__list", effect: tools.EffectExec}, tools.EffectRead},
		{tool{name: "mcp__other__list", effect: tools.EffectExec}, tools.EffectExec},
		{tool{name: "mcp__fs", effect: tools.EffectExec}, tools.EffectRead},
		{tool{name: "Read", effect: tools.EffectRead}, tools.EffectRead},
	} {
		if got := e.Of(c.tool); got != c.want {
			t.Errorf("%s: %q, want %q", c.tool.name, got, c.want)
		}
	}
	if _, ok := e.Declared("mcp__other__list"); ok {
		t.Error("an undeclared tool reads as declared")
	}
}
