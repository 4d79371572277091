package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sema-agent/sema/permission"
)

// dialogMaxLines bounds each side of an edit and a Write's content in the dialog. A
// Bash command is never shortened: a person must see every byte of what they approve.
const dialogMaxLines = 12

// Rule is what "allow always" is called, and remembered by, in this session: the exact
// command of a Bash call (Bash(go test ./...)), the path of a file tool's call
// (Edit(main.go)), the tool itself for anything else. A later question is allowed by it
// only when its Rule is the very same string — it is never read as rule syntax, in which
// Bash(rm *) would be every rm; what a settings file keeps is permission.NarrowRule.
func Rule(req permission.ApprovalRequest) string {
	if req.Tool == "Bash" {
		if c := field(req.Input, "command"); c != "" {
			return "Bash(" + c + ")"
		}
	}
	if f := pathField(req.Tool); f != "" {
		if p := field(req.Input, f); p != "" {
			return req.Tool + "(" + p + ")"
		}
	}
	return req.Tool
}

// pathField names the input field holding a file tool's target; "" for other tools.
func pathField(tool string) string {
	switch tool {
	case "Read", "Write", "Edit", "MultiEdit":
		return "file_path"
	case "NotebookEdit":
		return "notebook_path"
	case "Glob", "Grep", "LS":
		return "path"
	}
	return ""
}

// summary is a tool call in one line: the tool and what it acts on.
func summary(tool string, input json.RawMessage) string {
	var target string
	switch {
	case tool == "Bash":
		target = "$ " + firstLine(field(input, "command"))
	case tool == "Glob" || tool == "Grep":
		target = field(input, "pattern")
		if p := field(input, "path"); p != "" {
			target += " in " + p
		}
	case tool == "Task":
		target = field(input, "description")
	case tool == "WebFetch":
		target = field(input, "url")
	case pathField(tool) != "":
		target = field(input, pathField(tool))
	}
	return strings.TrimSpace(tool + " " + sanitize(target))
}

// actionLines is the exact action of a question: every line of a Bash command; the path
// of a file tool and, for an edit, the removed and added lines of each of its edits and
// whether it replaces every occurrence; indented JSON otherwise, so that no field of a
// call the dialog does not know goes unseen.
// Each line carries its kind, so the view can colour what is removed and added.
func actionLines(tool string, input json.RawMessage) []line {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return []line{{text: sanitize(string(input))}}
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch tool {
	case "Bash":
		var out []line
		for i, l := range strings.Split(str("command"), "\n") {
			p := "  "
			if i == 0 {
				p = "$ "
			}
			out = append(out, line{text: p + sanitize(l)})
		}
		if d := str("description"); d != "" {
			out = append(out, line{text: "# " + sanitize(d), kind: lineDim})
		}
		return out
	case "Write":
		out := []line{{text: "path: " + sanitize(str("file_path"))}}
		return append(out, shown(str("content"), "+ ", lineAdded)...)
	case "ExitPlanMode":
		if plan := str("plan"); plan != "" {
			var out []line
			for _, l := range strings.Split(strings.TrimRight(plan, "\n"), "\n") {
				out = append(out, line{text: sanitize(l)})
			}
			return out
		}
	case "Edit":
		out := []line{{text: "path: " + sanitize(str("file_path"))}}
		if all, _ := m["replace_all"].(bool); all {
			out = append(out, line{text: "replaces every occurrence, not only the first"})
		}
		out = append(out, shown(str("old_string"), "- ", lineRemoved)...)
		return append(out, shown(str("new_string"), "+ ", lineAdded)...)
	case "MultiEdit":
		edits, _ := m["edits"].([]any)
		if str("file_path") == "" || len(edits) == 0 {
			break
		}
		out := []line{{text: "path: " + sanitize(str("file_path"))}}
		for i, e := range edits {
			em, _ := e.(map[string]any)
			old, _ := em["old_string"].(string)
			repl, _ := em["new_string"].(string)
			head := fmt.Sprintf("edit %d of %d", i+1, len(edits))
			if all, _ := em["replace_all"].(bool); all {
				head += ": every occurrence, not only the first"
			}
			out = append(out, line{text: head, kind: lineDim})
			out = append(out, shown(old, "- ", lineRemoved)...)
			out = append(out, shown(repl, "+ ", lineAdded)...)
		}
		return out
	case "Read", "LS", "NotebookRead":
		// Reading names all it does by its path (an offset or a limit reads less).
		if f := pathField(tool); f != "" && str(f) != "" {
			return []line{{text: "path: " + sanitize(str(f))}}
		}
	}
	pretty, _ := json.MarshalIndent(m, "", "  ")
	var out []line
	for _, l := range strings.Split(string(pretty), "\n") {
		out = append(out, line{text: sanitize(l)})
	}
	return out
}

// shown prefixes the lines of file text, keeping at most dialogMaxLines.
func shown(text, prefix string, kind lineKind) []line {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var out []line
	for i, l := range lines {
		if i == dialogMaxLines {
			out = append(out, line{text: fmt.Sprintf("  … %d more lines", len(lines)-i), kind: lineDim})
			break
		}
		out = append(out, line{text: prefix + sanitize(strings.TrimSuffix(l, "\r")), kind: kind})
	}
	return out
}

// line is one line of the dialog with how to colour it.
type line struct {
	text string
	kind lineKind
}

type lineKind int

const (
	linePlain lineKind = iota
	lineDim
	lineAdded
	lineRemoved
)

func field(input json.RawMessage, key string) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

func firstLine(s string) string {
	first, rest, more := strings.Cut(s, "\n")
	if more && strings.TrimSpace(rest) != "" {
		return first + " …"
	}
	return first
}

// sanitize spells out control and invisible format characters, so text from the model
// cannot move the cursor, recolour the screen or show a person other text than what runs.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafeRune(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError)
}
