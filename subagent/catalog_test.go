package subagent

import (
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
)

func TestCatalogLayers(t *testing.T) {
	t.Parallel()
	project := []Definition{
		{Name: "reviewer", Description: "Project reviewer.", Source: "/w/.claude/agents/reviewer.md"},
		{Name: "Explore", Description: "Project explorer.", Tools: []string{"Read"}, Source: "/w/.claude/agents/explore.md"},
		{Name: "reviewer", Description: "Sema reviewer.", Source: "/w/.sema/agents/reviewer.md"},
		{Name: "auditor", Description: "Audits.", Source: "/w/.sema/agents/auditor.md"},
	}
	deployment := []Definition{
		{Name: "reviewer", Description: "Deployment reviewer.", Source: SourceDeployment},
	}
	c := NewCatalog(BuiltIns(), project, deployment)

	for _, tc := range []struct {
		name, source string
	}{
		{"general-purpose", SourceBuiltIn},
		{"Explore", "/w/.claude/agents/explore.md"},
		{"Plan", SourceBuiltIn},
		{"reviewer", SourceDeployment},
		{"auditor", "/w/.sema/agents/auditor.md"},
	} {
		d, ok := c.Lookup(tc.name)
		if !ok || d.Source != tc.source {
			t.Errorf("Lookup(%q) = %q, %v; want from %q", tc.name, d.Source, ok, tc.source)
		}
	}
	// A replaced definition is replaced whole, not merged.
	if d, _ := c.Lookup("Explore"); d.ReadOnly || !slices.Equal(d.Tools, []string{"Read"}) {
		t.Errorf("Explore = %+v, want the project's definition alone", d)
	}
	for _, name := range []string{"explore", "Reviewer", "", "general"} {
		if _, ok := c.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a definition", name)
		}
	}
	want := []string{"general-purpose", "Explore", "Plan", "auditor", "reviewer"}
	if got := c.Names(); !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	c.Names()[0] = "changed"
	if c.Names()[0] != "general-purpose" {
		t.Error("Names shares its slice with the catalog")
	}
}

func TestCatalogDescribe(t *testing.T) {
	t.Parallel()
	c := NewCatalog(BuiltIns(), []Definition{
		{Name: "writer", Description: "Writes.\nTwo lines.", DisallowedTools: []string{"Bash"}},
		{Name: "narrow", Description: "Narrow.", Tools: []string{"Read", "Bash"}, DisallowedTools: []string{"Bash"}},
	})
	got := c.Describe()
	for _, part := range []string{
		"- general-purpose: General-purpose agent",
		"(tools: all)\n",
		"- Explore: Fast read-only agent",
		"(tools: Read, Glob, Grep, LS, bash_readonly)\n",
		"- Plan: Read-only planning agent",
		"(tools: read-only)\n",
		"- narrow: Narrow. (tools: Read)\n",
		"- writer: Writes.\n  Two lines. (tools: all except Bash)\n",
	} {
		if !strings.Contains(got, part) {
			t.Errorf("Describe lacks %q:\n%s", part, got)
		}
	}
	if !strings.HasPrefix(got, "- general-purpose:") || strings.Index(got, "- narrow:") > strings.Index(got, "- writer:") {
		t.Errorf("Describe is not in Names order:\n%s", got)
	}
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	c := NewCatalog(BuiltIns(), []Definition{{Name: "reviewer", Description: "Reviews."}})
	for _, tc := range []struct {
		cat  *Catalog
		name string
		want string
	}{
		{c, "x", `there is no agent type "x"; the types are: general-purpose, Explore, Plan, reviewer`},
		{c, "explore", `there is no agent type "explore"; the types are: general-purpose, Explore, Plan, reviewer (did you mean "Explore"? names are case-sensitive)`},
		{NewCatalog(), "x", `there is no agent type "x"; no agent types are defined`},
		{&Catalog{}, "x", `there is no agent type "x"; no agent types are defined`},
	} {
		err := tc.cat.UnknownType(tc.name)
		if !sema.IsCode(err, CodeTypeUnknown) || sema.MessageOf(err) != tc.want {
			t.Errorf("UnknownType(%q) = %v, want %s: %s", tc.name, err, CodeTypeUnknown, tc.want)
		}
	}
}

func TestCatalogNilAndZero(t *testing.T) {
	t.Parallel()
	for _, c := range []*Catalog{nil, {}} {
		if _, ok := c.Lookup("Explore"); ok {
			t.Error("an empty catalog found a definition")
		}
		if c.Names() != nil || c.Describe() != "" {
			t.Error("an empty catalog lists types")
		}
	}
}
