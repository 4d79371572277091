package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goIdentifier finds what reads as Go rather than as the command line: a field path
// (Deps.MCP.TrustProject, TaskSpec.PermissionMode, Config.Env) or a CamelCase field name
// of two humps or more (AdditionalDirectories, TrustProject).
var goIdentifier = regexp.MustCompile(`\b(?:Deps|TaskSpec|Config|Options|Resume|Policy|Shell)\.[A-Z]\w*|\b[A-Z][a-z]+[A-Z][a-z]+\w*\.[A-Z]\w*|\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b`)

// cliNames are CamelCase words that are the command line's own: tool names, hook
// events, and names a person writes as they are.
var cliNames = append(slices.Clone(builtinTools), "EnterPlanMode", "ExitPlanMode",
	"PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "SessionEnd", "SubagentStop", "PreCompact", "Notification", "Stop",
	"GitHub", "JavaScript", "TypeScript")

// goWords returns the Go identifiers in text, the paths of temporary directories (which
// hold test names) left out, and the detail of JSON errors and notices: its values are
// data a program branches on (a seat, a field), kept stable, not sentences.
func goWords(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		var v any
		if json.Unmarshal([]byte(l), &v) == nil {
			b, _ := json.Marshal(withoutDetail(v))
			lines[i] = string(b)
		}
	}
	text = strings.Join(lines, "\n")
	text = regexp.MustCompile(regexp.QuoteMeta(os.TempDir())+`/[^\s"']*`).ReplaceAllString(text, "$$TMP")
	var found []string
	for _, m := range goIdentifier.FindAllString(text, -1) {
		if !slices.Contains(cliNames, m) {
			found = append(found, m)
		}
	}
	return found
}

// withoutDetail is v with every member named detail removed, at any depth.
func withoutDetail(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "detail")
		for k, e := range x {
			x[k] = withoutDetail(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withoutDetail(e)
		}
	}
	return v
}

// Every message a CLI run prints names flags and settings, never the library's Go
// fields. The table holds a run for each message of the library that names a field
// (see TestLibraryFieldsAreTranslated for the list), in text and JSON output.
func TestMessagesInCLIWords(t *testing.T) {
	w := newPromptWorld(t)
	writeFile(t, filepath.Join(w.root, ".mcp.json"), `{"mcpServers":{"x":{"command":"true"}}}`)
	writeFile(t, filepath.Join(w.root, ".sema", "settings.json"), `{"permissions":{"allow":["Read"]}}`)
	park := "scripted/" + writeFile(t, filepath.Join(t.TempDir(), "park.json"),
		`{"turns":[{"tool_calls":[{"name":"Write","input":{"file_path":"b.txt","content":"y"}}]},{"text":"written"}]}`)
	code, out, errs := w.run(t, strings.NewReader(""), "-p", "write b", "--model", park, "--on-ask", "park", "--output-format", "json")
	var parked struct {
		SessionID  string `json:"session_id"`
		Checkpoint struct {
			ID string `json:"id"`
		} `json:"checkpoint"`
	}
	if code != exitAwaiting || json.Unmarshal([]byte(out), &parked) != nil {
		t.Fatalf("parking run: exit %d\n%s\n%s", code, out, errs)
	}
	runs := []struct {
		name string
		args []string
		says string // a word of the message the run must print, so the run is known to reach it
	}{
		{"an untrusted workspace's settings and MCP servers", []string{"-p", "hello"}, "--trust-project-mcp"},
		{"a budget for a model without a price", []string{"-p", "hello", "--model", "openai-compatible/llama3.1", "--base-url", "http://127.0.0.1:9/v1", "--max-budget-usd", "1"}, "prices.json"},
		{"a settings file's directory that is missing", []string{"-p", "hello", "--settings", `{"permissions":{"additionalDirectories":["/nonexistent-sema-test"]}}`}, "/nonexistent-sema-test"},
		{"a refused answer's configuration", []string{"approve", parked.SessionID, "--checkpoint", parked.Checkpoint.ID, "--allow", "--max-turns", "-1"}, "--max-turns"},
	}
	for _, r := range runs {
		for _, format := range []string{"text", "json"} {
			code, out, errs := w.run(t, strings.NewReader(""), append(r.args, "--output-format", format)...)
			all := out + errs
			if !strings.Contains(all, r.says) {
				t.Errorf("%s (%s): exit %d, the message naming %q was not printed:\n%s", r.name, format, code, r.says, all)
			}
			if found := goWords(all); len(found) > 0 {
				t.Errorf("%s (%s): Go identifiers %q in what the command line printed:\n%s", r.name, format, found, all)
			}
		}
	}
	var listed strings.Builder
	for _, format := range []string{"text", "json"} {
		_, out, errs := cli(t, "", "mcp", "list", "--cwd", w.root, "--output-format", format)
		listed.WriteString(out + errs)
	}
	if found := goWords(listed.String()); len(found) > 0 || !strings.Contains(listed.String(), "untrusted") {
		t.Errorf("sema mcp list: Go identifiers %q in:\n%s", found, listed.String())
	}
}

// libraryOnly are the Go fields the library's messages name that no command line can
// reach: the CLI always wires a store, a history, a provider and the tools, so these
// refusals would be a bug of sema's own wiring, reported as the library words it.
var libraryOnly = []string{
	"Deps.Store", "Deps.History", "Deps.Provider", "Deps.Approver", "Deps.Tools", "Deps.Delegation",
	"Deps.Instructions.MaxChars", "Deps.WebFetch.MaxBytes", "Deps.WebFetch.Timeout", "Deps.Context.Window", "Deps.Context.Threshold",
	"Deps.Settings.Files", "Deps.Settings.Managed", "Deps.FileHistoryCapture", "Deps.Hooks", "Deps.Shell", "Deps.Env", "Deps.Policy.",
	"Resume.SessionID", "Resume.At", "Hooks.TrackFileEdit", "TaskSpec.MaxTokens", "Config.Env", "Config.Fence", "Config.ScratchDir",
	"Config.EnvPassthrough", "Config.CommitCoAuthor", "Config.Durable", "Config.Modes", "Spec.Name",
}

// Every Go field a message of the library names (a string literal of the packages a run
// goes through) is either translated by cliWords or one the command line cannot reach
// (libraryOnly). A new message naming a field must choose.
func TestLibraryFieldsAreTranslated(t *testing.T) {
	fieldPath := regexp.MustCompile(`\b(?:Deps|TaskSpec|Config|Resume|Hooks|Spec)\.[A-Z][A-Za-z]*(?:\.[A-Z][A-Za-z]*)*\.?|\bAdditional(?:Read)?Directories\b`)
	var untranslated []string
	named := 0 // literals that name a field before translation: the scan reads something
	for _, dir := range []string{"agent", "fence", "hooks", "settings", "permission", "mcp", "sandbox", "tools", "tools/shell", "session", "statedir", "history", "pricing", "model/modelref", "internal/gate"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			node, err := parser.ParseFile(token.NewFileSet(), f, nil, 0) // comments are not messages
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(node, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				if fieldPath.MatchString(s) {
					named++
				}
				for _, m := range fieldPath.FindAllString(cliWords(s), -1) {
					if !slices.ContainsFunc(libraryOnly, func(p string) bool { return strings.HasPrefix(m, p) }) {
						untranslated = append(untranslated, f+": "+m)
					}
				}
				return true
			})
		}
	}
	if named < 20 {
		t.Fatalf("only %d library messages name a Go field; the scan is not reading the sources", named)
	}
	if len(untranslated) > 0 {
		t.Errorf("library messages name Go fields that cliWords does not translate; add a phrase to cliPhrases or, when no command line reaches it, to libraryOnly:\n%s", strings.Join(untranslated, "\n"))
	}
}
