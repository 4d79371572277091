package permission

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/sema-agent/sema/internal/rulematch"
)

// NarrowRule is the rule, in permission-rule syntax, that allows the call of tool with
// input and as little else as the syntax can say — what "allow always" may keep in a
// settings file, or offer a client to keep, for a call a person approved once:
//   - a Bash call of one plain command of literal words: that command exactly
//     ("Bash(go test ./...)"); "" for any other (a glob, an operator, an expansion),
//     whose rule text would mean more than the command — Bash(rm *) is every rm;
//   - a file tool's call: its path, absolute ("Edit(//work/app/main.go)"), read against
//     root when the call gave it relative; "" when it cannot be written as one path
//     (a pattern character, no root to read it against) — Edit(main.go) would be every
//     main.go at any depth;
//   - any other tool: the tool's name.
//
// A file rule names the family (Read or Edit) whose rules cover the tool.
func NarrowRule(tool string, input json.RawMessage, root string) string {
	if tool == "Bash" {
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(input, &in) != nil {
			return ""
		}
		cmd := strings.TrimSpace(in.Command)
		if cmd == "" || strings.ContainsAny(cmd, "()\n") {
			return ""
		}
		if _, why := rulematch.LiteralCommand(cmd); why != "" {
			return ""
		}
		return "Bash(" + cmd + ")"
	}
	field := pathFieldOf(tool)
	if field == "" {
		return tool
	}
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	p, _ := in[field].(string)
	if p == "" || strings.ContainsAny(p, "()*?[]{}\\!") {
		return ""
	}
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(root) {
			return ""
		}
		p = filepath.Join(root, p)
	}
	family := "Read"
	if rulematch.IsEditTool(tool) {
		family = "Edit"
	}
	return family + "(/" + filepath.Clean(p) + ")"
}

// pathFieldOf names the input member holding a file tool's path ("" for other tools).
func pathFieldOf(tool string) string {
	switch tool {
	case "Read", "Write", "Edit", "MultiEdit":
		return "file_path"
	case "NotebookEdit", "NotebookRead":
		return "notebook_path"
	case "Glob", "Grep", "LS":
		return "path"
	}
	return ""
}
