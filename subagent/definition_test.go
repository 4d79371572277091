package subagent

import (
	"slices"
	"strings"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/permission"
)

func TestBuiltIns(t *testing.T) {
	t.Parallel()
	b := BuiltIns()
	var names []string
	for _, d := range b {
		names = append(names, d.Name)
		if err := Validate(d); err != nil {
			t.Errorf("built-in %s: %v", d.Name, err)
		}
		if d.Source != SourceBuiltIn || d.Prompt == "" {
			t.Errorf("built-in %s: Source %q, Prompt %q", d.Name, d.Source, d.Prompt)
		}
	}
	if !slices.Equal(names, []string{NameGeneralPurpose, NameExplore, NamePlan}) {
		t.Errorf("names = %v", names)
	}
	gp, ex, pl := b[0], b[1], b[2]
	if gp.Tools != nil || gp.ReadOnly || gp.PermissionMode != "" || !strings.Contains(gp.Prompt, "final message") {
		t.Errorf("general-purpose = %+v", gp)
	}
	if !ex.ReadOnly || !slices.Equal(ex.Tools, []string{"Read", "Glob", "Grep", "LS", "bash_readonly"}) ||
		!strings.Contains(ex.Prompt, "path:line") || !strings.Contains(ex.Prompt, "Never create, modify or delete") {
		t.Errorf("Explore = %+v", ex)
	}
	if !pl.ReadOnly || pl.PermissionMode != permission.ModePlan || !strings.Contains(pl.Prompt, "do not modify anything") {
		t.Errorf("Plan = %+v", pl)
	}
	// Each call returns fresh values.
	b[1].Tools[0] = "Write"
	if BuiltIns()[1].Tools[0] != "Read" {
		t.Error("BuiltIns shares its tool lists between calls")
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    Definition
		tool string
		want bool
	}{
		{Definition{}, "Bash", true},
		{Definition{Tools: []string{"Read", "Grep"}}, "Read", true},
		{Definition{Tools: []string{"Read", "Grep"}}, "Bash", false},
		{Definition{Tools: []string{"Read"}}, "read", false},
		{Definition{DisallowedTools: []string{"Bash"}}, "Bash", false},
		{Definition{DisallowedTools: []string{"Bash"}}, "Read", true},
		{Definition{Tools: []string{"Read", "Bash"}, DisallowedTools: []string{"Bash"}}, "Bash", false},
		{Definition{Tools: []string{"mcp__github__create_issue"}}, "mcp__github__create_issue", true},
	} {
		if got := tc.d.Allows(tc.tool); got != tc.want {
			t.Errorf("%+v.Allows(%q) = %v, want %v", tc.d, tc.tool, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Definition{Name: "deploy-bot", Description: "Deploys.", Source: SourceDeployment}
	with := func(f func(*Definition)) Definition {
		d := ok
		f(&d)
		return d
	}
	if err := Validate(ok); err != nil {
		t.Fatalf("Validate(ok) = %v", err)
	}
	for _, tc := range []struct {
		name string
		d    Definition
		want string
	}{
		{"no name", with(func(d *Definition) { d.Name = "" }), `agent definition (deployment): name is missing`},
		{"bad name", with(func(d *Definition) { d.Name = "a/b" }), `agent definition "a/b" (deployment): name "a/b" is not an agent name`},
		{"blank description", with(func(d *Definition) { d.Description = " \n" }), "description is missing"},
		{"empty tools", with(func(d *Definition) { d.Tools = []string{} }), "Tools is empty but not nil"},
		{"bad tool", with(func(d *Definition) { d.Tools = []string{"Read", ""} }), `tools: "" is not a tool name`},
		{"bad disallowed tool", with(func(d *Definition) { d.DisallowedTools = []string{"Bash(*)"} }), `disallowedTools: "Bash(*)" is not a tool name`},
		{"bad model", with(func(d *Definition) { d.Model = "a\nb" }), "is not a model name"},
		{"bad mode", with(func(d *Definition) { d.PermissionMode = "yolo" }), `permissionMode "yolo" is not a mode; use one of default,`},
		{"bad prompt", with(func(d *Definition) { d.Prompt = "\xff" }), "the prompt is not valid UTF-8"},
		{"no source", Definition{Name: "x"}, `agent definition "x": description is missing`},
	} {
		err := Validate(tc.d)
		if !sema.IsCode(err, CodeDefinitionInvalid) || !strings.Contains(sema.MessageOf(err), tc.want) {
			t.Errorf("%s: Validate = %v, want %s containing %q", tc.name, err, CodeDefinitionInvalid, tc.want)
		}
	}
}
