package subagent_test

import (
	"fmt"

	"github.com/sema-agent/sema/subagent"
)

func ExampleParse() {
	file := `---
name: code-reviewer
description: Reviews a change for bugs and style. Use after editing code.
tools: Read, Grep, Glob
model: inherit
color: purple
---
You are a careful code reviewer. Report each problem as path:line.
`
	d, err := subagent.Parse(".claude/agents/code-reviewer.md", []byte(file))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Name)
	fmt.Println(d.Tools, d.Allows("Grep"), d.Allows("Bash"))
	fmt.Printf("model %q, mode %q\n", d.Model, d.PermissionMode)
	fmt.Println(d.Prompt)

	_, err = subagent.Parse("bad.md", []byte("---\nname: x\ndescription: d\npermissionMode: yolo\n---\n"))
	fmt.Println(err)
	// Output:
	// code-reviewer
	// [Read Grep Glob] true false
	// model "inherit", mode ""
	// You are a careful code reviewer. Report each problem as path:line.
	// subagent.definition_invalid: bad.md:4: permissionMode "yolo" is not a mode; use one of default, acceptEdits, plan, auto, dontAsk, bypassPermissions
}
