package subagent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sema-agent/sema"
)

// Catalog is the set of agent types one leg may delegate to, one definition per name.
// It is immutable once built, so one Catalog may serve many legs at once. The zero
// value is an empty catalog.
type Catalog struct {
	defs  map[string]Definition
	names []string
}

// NewCatalog layers definitions into a catalog. Layers are applied in order, and so are
// the definitions within one: a later definition of a name replaces an earlier one
// whole (fields are not merged). The runner passes BuiltIns(), then what Load returned
// (the .claude files, then the .sema ones), then the deployment's definitions, so the
// deployment's win over the project's and the project's over the built-ins.
//
// NewCatalog does not validate: BuiltIns and Parse return valid definitions, and a
// deployment runs its own through Validate first.
func NewCatalog(layers ...[]Definition) *Catalog {
	c := &Catalog{defs: map[string]Definition{}}
	for _, layer := range layers {
		for _, d := range layer {
			c.defs[d.Name] = d
		}
	}
	for _, name := range builtInOrder {
		if _, ok := c.defs[name]; ok {
			c.names = append(c.names, name)
		}
	}
	var rest []string
	for name := range c.defs {
		if !slices.Contains(builtInOrder, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	c.names = append(c.names, rest...)
	return c
}

// Lookup returns the definition of the type the model named. Names match exactly,
// case included: "explore" is not "Explore" (UnknownType suggests the right spelling).
func (c *Catalog) Lookup(name string) (Definition, bool) {
	if c == nil {
		return Definition{}, false
	}
	d, ok := c.defs[name]
	return d, ok
}

// Names returns the names of the catalog's types: first the built-in names
// (general-purpose, Explore, Plan, whoever defines them last), then the others sorted
// byte-wise. The built-ins lead because they are the types the model reaches for
// first; the fixed order keeps the Task tool's description stable from run to run.
func (c *Catalog) Names() []string {
	if c == nil {
		return nil
	}
	return slices.Clone(c.names)
}

// Describe lists the types for the Task tool's model-facing description, one entry per
// type in Names order: "- name: description (tools: …)". The tools part says what the
// child may use: "all", "read-only", an exact list, and what disallowedTools removes.
// Lines after the first of a description are indented under their entry.
func (c *Catalog) Describe() string {
	var b strings.Builder
	for _, name := range c.Names() {
		d := c.defs[name]
		desc := strings.ReplaceAll(strings.TrimSpace(d.Description), "\n", "\n  ")
		fmt.Fprintf(&b, "- %s: %s (tools: %s)\n", d.Name, desc, toolsText(d))
	}
	return b.String()
}

// toolsText says in a few words which tools a definition lets the child use.
func toolsText(d Definition) string {
	if d.Tools != nil {
		var allowed []string
		for _, t := range d.Tools {
			if d.Allows(t) {
				allowed = append(allowed, t)
			}
		}
		if len(allowed) == 0 {
			return "none"
		}
		return strings.Join(allowed, ", ")
	}
	s := "all"
	if d.ReadOnly {
		s = "read-only"
	}
	if len(d.DisallowedTools) > 0 {
		s += " except " + strings.Join(d.DisallowedTools, ", ")
	}
	return s
}

// UnknownType is the error for a subagent_type the catalog does not define: a
// *sema.Error with CodeTypeUnknown that lists the types there are, and suggests the
// one a name differs from only in case.
func (c *Catalog) UnknownType(name string) error {
	names := c.Names()
	msg := fmt.Sprintf("there is no agent type %s; the types are: %s", short(name), strings.Join(names, ", "))
	if len(names) == 0 {
		msg = fmt.Sprintf("there is no agent type %s; no agent types are defined", short(name))
	}
	for _, n := range names {
		if strings.EqualFold(n, name) {
			msg += fmt.Sprintf(" (did you mean %q? names are case-sensitive)", n)
			break
		}
	}
	return sema.Errorf(CodeTypeUnknown, "%s", msg).With("type", name).With("types", names)
}
