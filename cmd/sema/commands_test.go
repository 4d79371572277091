package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// commandsWorld is a home directory (HOME points at it), a workspace, a state
// directory and a directory of scripts, all temporary.
type commandsWorld struct {
	home, root, state, scripts string
}

func newCommandsWorld(t *testing.T) commandsWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := commandsWorld{
		home: filepath.Join(base, "home"), root: filepath.Join(base, "root"),
		state: filepath.Join(base, "state"), scripts: filepath.Join(base, "scripts"),
	}
	for _, d := range []string{w.home, w.root, w.state, w.scripts} {
		os.MkdirAll(d, 0o755)
	}
	t.Setenv("HOME", w.home)
	t.Setenv("SEMA_HOME", "")
	t.Setenv("SEMA_MODEL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	return w
}

// script writes a scripted model's script and returns its --model reference.
func (w commandsWorld) script(t *testing.T, name, body string) string {
	t.Helper()
	return "scripted/" + writeFile(t, filepath.Join(w.scripts, name), body)
}

// run runs sema in-process with the world's workspace and state directory.
func (w commandsWorld) run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if args[0] == "run" {
		args = append([]string{"run", "--cwd", w.root, "--home", w.state, "--sandbox", "off", "--output-format", "json"}, args[1:]...)
	}
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

type jsonResult struct {
	Status            string `json:"status"`
	Result            string `json:"result"`
	PermissionDenials []struct {
		Tool string `json:"tool"`
	} `json:"permission_denials"`
}

func decodeResult(t *testing.T, out string) jsonResult {
	t.Helper()
	var r jsonResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

// The scripted model answers "expanded" only to a conversation whose first message is
// the command's expansion, and "as typed" to any other.
const expansionScript = `{"turns":[{"text":"as typed"}],
	"threads":[{"match":"Fix issue #123 with priority high priority.","turns":[{"text":"expanded"}]}]}`

// `sema run /name args…` and `sema -p "/name args…"` send the command's expansion to
// the model; a prompt from stdin, and a first word with a second slash, are sent as
// they are.
func TestCommandExpansionReachesTheModel(t *testing.T) {
	w := newCommandsWorld(t)
	writeFile(t, filepath.Join(w.home, ".sema", "commands", "fix.md"),
		"---\ndescription: Fix an issue\nargument-hint: [issue] [priority]\n---\nFix issue #$1 with priority $2.\n")
	model := w.script(t, "s.json", expansionScript)
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"run with the arguments as words", "", []string{"run", "--model", model, "/fix", "123", "high priority"}, "expanded"},
		{"run with one prompt", "", []string{"run", "--model", model, `/fix 123 "high priority"`}, "expanded"},
		{"-p", "", []string{"-p", `/fix 123 'high priority'`, "--cwd", w.root, "--home", w.state, "--sandbox", "off", "--output-format", "json", "--model", model}, "expanded"},
		{"a prompt from stdin is data", `/fix 123 "high priority"`, []string{"run", "--model", model, "-"}, "as typed"},
		{"a path is not a command", "", []string{"run", "--model", model, "/tmp/foo is broken"}, "as typed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := w.run(t, tt.stdin, tt.args...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			if r := decodeResult(t, out); r.Result != tt.want {
				t.Fatalf("the model answered %q, want %q", r.Result, tt.want)
			}
		})
	}
}

// A prompt of the form /name that no command has is refused before any model is
// opened, naming the commands there are; a malformed command file is refused naming
// the file.
func TestCommandRefusals(t *testing.T) {
	w := newCommandsWorld(t)
	writeFile(t, filepath.Join(w.home, ".sema", "commands", "fix.md"), "Fix $ARGUMENTS")
	writeFile(t, filepath.Join(w.root, ".sema", "commands", "broken.md"), "---\ndescription: never closed\n")
	model := w.script(t, "s.json", expansionScript)

	code, out, errs := w.run(t, "", "run", "--model", model, "/deploy", "now")
	if code != exitUsage || !strings.Contains(errs, "(config.command_unknown)") || !strings.Contains(errs, "/fix") {
		t.Fatalf("unknown command: exit %d\n%s\n%s", code, out, errs)
	}
	var refusal struct {
		Status string `json:"status"`
		Error  struct {
			Code   string         `json:"code"`
			Detail map[string]any `json:"detail"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &refusal); err != nil || refusal.Error.Code != "config.command_unknown" {
		t.Fatalf("the JSON refusal: %v\n%s", err, out)
	}
	if d := cmp.Diff([]any{"fix"}, refusal.Error.Detail["available"]); d != "" {
		t.Errorf("available (-want +got)\n%s", d)
	}

	code, _, errs = w.run(t, "", "run", "--model", model, "/broken")
	if code != exitUsage || !strings.Contains(errs, "(config.command_invalid)") || !strings.Contains(errs, filepath.Join(".sema", "commands", "broken.md")) {
		t.Fatalf("broken command: exit %d\n%s", code, errs)
	}
	code, _, errs = w.run(t, "", "run", "--model", model, `/fix "open`)
	if code != exitUsage || !strings.Contains(errs, "(config.command_invalid)") {
		t.Fatalf("unterminated quote: exit %d\n%s", code, errs)
	}
	// Several words are a command's arguments only after a command's name.
	code, _, errs = w.run(t, "", "run", "--model", model, "fix", "it")
	if code != exitUsage || !strings.Contains(errs, "(cli.usage)") {
		t.Fatalf("several words: exit %d\n%s", code, errs)
	}
}

// A workspace's command in a workspace not trusted still expands, but its
// allowed-tools and model are dropped with a notice; trusted, both apply. The user's
// own command's allowed-tools apply in any workspace.
func TestProjectCommandTrust(t *testing.T) {
	w := newCommandsWorld(t)
	write := `{"tool_calls":[{"name":"Write","input":{"file_path":"a.txt","content":"x"}}]}`
	t.Setenv("SEMA_MODEL", w.script(t, "env.json", `{"turns":[`+write+`,{"text":"from SEMA_MODEL"}]}`))
	cmdModel := w.script(t, "cmd.json", `{"turns":[`+write+`,{"text":"from the command's model"}]}`)
	writeFile(t, filepath.Join(w.root, ".sema", "commands", "write.md"),
		"---\nallowed-tools: Write\nmodel: "+cmdModel+"\n---\nWrite a.txt.\n")
	writeFile(t, filepath.Join(w.home, ".sema", "commands", "mine.md"),
		"---\nallowed-tools:\n  - Write\n---\nWrite a.txt for me.\n")
	// The user's /write is hidden by the workspace's.
	writeFile(t, filepath.Join(w.home, ".sema", "commands", "write.md"), "my own write")
	target := filepath.Join(w.root, "a.txt")

	code, out, errs := w.run(t, "", "run", "/write")
	if code != exitOK {
		t.Fatalf("untrusted: exit %d\n%s\n%s", code, out, errs)
	}
	r := decodeResult(t, out)
	if r.Result != "from SEMA_MODEL" || len(r.PermissionDenials) != 1 || r.PermissionDenials[0].Tool != "Write" {
		t.Errorf("untrusted: the command's model or allow rule applied: %+v", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("untrusted: a.txt was written")
	}
	if !strings.Contains(errs, "(config.project_settings_untrusted)") || !strings.Contains(errs, "/write") {
		t.Errorf("untrusted: no notice on stderr:\n%s", errs)
	}
	if !strings.Contains(errs, "(config.command_shadowed)") || !strings.Contains(errs, filepath.Join(w.home, ".sema", "commands", "write.md")) {
		t.Errorf("untrusted: no notice that the user's /write is hidden:\n%s", errs)
	}

	code, out, errs = w.run(t, "", "run", "--trust-project", "/write")
	if code != exitOK {
		t.Fatalf("trusted: exit %d\n%s\n%s", code, out, errs)
	}
	r = decodeResult(t, out)
	if r.Result != "from the command's model" || len(r.PermissionDenials) != 0 {
		t.Errorf("trusted: %+v", r)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("trusted: a.txt was not written: %v", err)
	}
	if strings.Contains(errs, "untrusted") || strings.Contains(errs, "command_shadowed") {
		t.Errorf("trusted: a notice:\n%s", errs)
	}

	os.Remove(target)
	code, out, errs = w.run(t, "", "run", "/mine")
	if r := decodeResult(t, out); code != exitOK || len(r.PermissionDenials) != 0 {
		t.Fatalf("the user's command: exit %d %+v\n%s", code, r, errs)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the user's command: a.txt was not written: %v", err)
	}
	if strings.Contains(errs, "untrusted") {
		t.Errorf("the user's command: a notice:\n%s", errs)
	}
}

// `sema commands list` names each command with its description, argument hint, scope
// and file, says which files it hides, and lists Claude Code's unless --no-claude-compat.
func TestCommandsList(t *testing.T) {
	w := newCommandsWorld(t)
	writeFile(t, filepath.Join(w.root, ".sema", "commands", "frontend", "component.md"),
		"---\ndescription: Make a component\nargument-hint: [name]\nwhen_to_use: later\n---\nMake $1")
	writeFile(t, filepath.Join(w.home, ".sema", "commands", "frontend", "component.md"), "mine")
	writeFile(t, filepath.Join(w.home, ".claude", "commands", "review.md"), "---\ndescription: \"Review \x1b[31mred\"\n---\nReview")

	code, out, errs := w.run(t, "", "commands", "list", "--cwd", w.root, "--no-claude-compat")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"COMMAND", "/frontend:component", "Make a component", "[name]",
		"project " + filepath.Join(w.root, ".sema", "commands", "frontend", "component.md"),
		"/frontend:component hides the user command " + filepath.Join(w.home, ".sema", "commands", "frontend", "component.md"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "/review") {
		t.Errorf("with --no-claude-compat, .claude/commands was read:\n%s", out)
	}
	if !strings.Contains(errs, `"when_to_use"`) {
		t.Errorf("no warning about the key sema does not read:\n%s", errs)
	}

	code, out, errs = w.run(t, "", "commands", "list", "--cwd", w.root)
	if code != exitOK || !strings.Contains(out, "/review") || !strings.Contains(out, "user "+filepath.Join(w.home, ".claude", "commands", "review.md")) {
		t.Fatalf("by default: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", out)
	}

	code, out, errs = w.run(t, "", "commands", "list", "--cwd", w.root, "--json", "--no-claude-compat")
	if code != exitOK {
		t.Fatalf("--json: exit %d\n%s\n%s", code, out, errs)
	}
	var listed struct {
		Commands []struct {
			Name, Description, ArgumentHint, Scope, Path string
			Shadows                                      []struct{ Path, Scope string }
		} `json:"commands"`
		Problems []any `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(listed.Commands) != 1 || listed.Commands[0].Name != "frontend:component" || listed.Commands[0].Scope != "project" ||
		len(listed.Commands[0].Shadows) != 1 || listed.Commands[0].Shadows[0].Scope != "user" || listed.Problems == nil {
		t.Errorf("--json: %+v", listed)
	}

	// A file that cannot be used is named on stderr, and the exit code says so.
	writeFile(t, filepath.Join(w.root, ".sema", "commands", "bad.md"), "---\nunclosed\n")
	code, out, errs = w.run(t, "", "commands", "list", "--cwd", w.root)
	if code != exitUsage || !strings.Contains(errs, "bad.md") || !strings.Contains(errs, "(config.command_invalid)") || !strings.Contains(out, "/frontend:component") {
		t.Fatalf("broken file: exit %d\n%s\n%s", code, out, errs)
	}
}
