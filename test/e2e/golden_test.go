package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the output shapes")

// goldenScenario is one run of the binary whose whole output is pinned: a change of shape
// (a renamed field, a new event, a different order) is a reviewed diff of its golden file.
type goldenScenario struct {
	name   string
	files  map[string]string
	script string
	args   []string
}

var goldenScenarios = []goldenScenario{
	{
		name:   "read_and_answer",
		files:  map[string]string{"notes.txt": "alpha\nbeta\n"},
		script: `{"turns":[{"text":"reading","tool_calls":[{"name":"Read","input":{"file_path":"notes.txt"}}]},{"text":"two lines: alpha and beta"}]}`,
		args:   []string{"--output-format", "stream-json"},
	},
	{
		name:   "write_denied",
		files:  map[string]string{"a.txt": "a\n"},
		script: `{"turns":[{"tool_calls":[{"name":"Write","input":{"file_path":"b.txt","content":"b\n"}}]},{"text":"could not write"}]}`,
		args:   []string{"--output-format", "stream-json", "--on-ask", "deny"},
	},
	{
		name:   "edit_and_bash_accept_edits",
		files:  map[string]string{"main.go": "package main\n\nfunc main() { println(\"helo\") }\n"},
		script: `{"turns":[{"tool_calls":[{"name":"Read","input":{"file_path":"main.go"}}]},{"tool_calls":[{"name":"Edit","input":{"file_path":"main.go","old_string":"helo","new_string":"hello"}}]},{"tool_calls":[{"name":"Bash","input":{"command":"mkdir -p out && ls"}}]},{"text":"fixed"}]}`,
		args:   []string{"--output-format", "stream-json", "--permission-mode", "acceptEdits"},
	},
	{
		name:   "parked_json",
		files:  map[string]string{"CHANGES.md": "# changes\n"},
		script: `{"turns":[{"tool_calls":[{"name":"Read","input":{"file_path":"CHANGES.md"}}]},{"tool_calls":[{"name":"Write","input":{"file_path":"CHANGES.md","content":"# changes\n- one\n"}}]},{"text":"done"}]}`,
		args:   []string{"--output-format", "json", "--on-ask", "park"},
	},
	{
		name: "todo_write",
		script: `{"turns":[` +
			`{"tool_calls":[{"name":"TodoWrite","input":{"todos":[{"content":"Read the notes","status":"in_progress","activeForm":"Reading the notes"},{"content":"Answer","status":"pending","activeForm":"Answering"}]}}]},` +
			`{"tool_calls":[{"name":"TodoWrite","input":{"todos":[{"content":"Read the notes","status":"completed","activeForm":"Reading the notes"},{"content":"","status":"pending","activeForm":"Answering"}]}}]},` +
			`{"text":"done"}]}`,
		args: []string{"--output-format", "stream-json"},
	},
	{
		name:   "unknown_tool_and_bad_input",
		script: `{"turns":[{"tool_calls":[{"name":"Teleport","input":{}},{"name":"Read","input":{"path":"x"}}]},{"text":"ok"}]}`,
		args:   []string{"--output-format", "stream-json"},
	},
}

// normalize replaces what differs from run to run and machine to machine with names.
func normalize(out, root, home string) string {
	out = strings.ReplaceAll(out, root, "$ROOT")
	out = strings.ReplaceAll(out, home, "$HOME")
	out = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).ReplaceAllString(out, "$$UUID")
	out = regexp.MustCompile(`"input_sha256":"[0-9a-f]{64}"`).ReplaceAllString(out, `"input_sha256":"$$SHA256"`)
	// The scripted model estimates tokens from the text, which holds the temp paths.
	out = regexp.MustCompile(`"(input_tokens|output_tokens|inputTokens|outputTokens|system_prompt_chars|duration_ms|duration_api_ms)":\d+`).ReplaceAllString(out, `"$1":"$$N"`)
	out = strings.ReplaceAll(out, `"platform":"`+runtime.GOOS+"/"+runtime.GOARCH+`"`, `"platform":"$PLATFORM"`)
	return out
}

func TestGoldenOutputShapes(t *testing.T) {
	for _, sc := range goldenScenarios {
		t.Run(sc.name, func(t *testing.T) {
			dir := writeTree(t, sc.files)
			home := t.TempDir()
			args := append([]string{"run", "--model", "scripted/" + writeScript(t, sc.script), "--home", home, "--sandbox", "off"}, sc.args...)
			args = append(args, "do the task")
			r := sema(t, dir, nil, "", args...)
			got := "# sema " + strings.Join(sc.args, " ") + "\n# exit " + strconv.Itoa(r.code) + "\n" + normalize(r.stdout, dir, home)
			path := filepath.Join("testdata", "golden", sc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run the test with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("the output of %s changed shape; if that is intended, run `go test ./test/e2e -run Golden -update` and review the diff.\ngot:\n%s\nwant:\n%s", sc.name, got, want)
			}
		})
	}
}
