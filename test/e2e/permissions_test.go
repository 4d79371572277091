package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/model/anthropic/anthropictest"
)

// toolCall is one scripted call.
type toolCall struct {
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

func writeOf(path, content string) toolCall {
	return toolCall{"Write", map[string]any{"file_path": path, "content": content}}
}

// scriptOf writes a script that makes each call in its own turn, then answers
// "finished".
func scriptOf(t *testing.T, calls ...toolCall) string {
	t.Helper()
	type turn struct {
		Text      string     `json:"text,omitempty"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	var turns []turn
	for _, c := range calls {
		turns = append(turns, turn{Text: "calling " + c.Name, ToolCalls: []toolCall{c}})
	}
	turns = append(turns, turn{Text: "finished"})
	b, err := json.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	return writeScript(t, string(b))
}

// runOut is a stream-json run: its events and the result line.
type runOut struct {
	result
	events []map[string]any
	final  map[string]any
}

// semaStream runs sema with --output-format stream-json and decodes its lines.
func semaStream(t *testing.T, dir string, env []string, stdin string, args ...string) runOut {
	t.Helper()
	r := sema(t, dir, env, stdin, append(args, "--output-format", "stream-json")...)
	out := runOut{result: r}
	if r.code == 2 {
		return out
	}
	out.events = streamEvents(t, r.stdout)
	out.final = out.events[len(out.events)-1]
	if out.final["type"] != "result" {
		t.Fatalf("the last line is not the result: %v", out.final)
	}
	return out
}

// denials returns the result's permission_denials.
func (o runOut) denials() []map[string]any {
	var out []map[string]any
	for _, d := range o.final["permission_denials"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// toolResults returns the tool_result events.
func (o runOut) toolResults() []map[string]any {
	var out []map[string]any
	for _, e := range o.events {
		if e["type"] == "tool_result" {
			out = append(out, e)
		}
	}
	return out
}

// modeReceipt returns the manifest's permission_mode member.
func modeReceipt(t *testing.T, final map[string]any) map[string]any {
	t.Helper()
	m, ok := final["manifest"].(map[string]any)["permission_mode"].(map[string]any)
	if !ok {
		t.Fatalf("no permission_mode in the manifest: %v", final["manifest"])
	}
	return m
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestModesNonInteractive drives one Write through every mode with nobody to ask: what
// a mode allows lands, what it asks about is denied and listed, and the run still
// completes with the model's final text.
func TestModesNonInteractive(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		mode     string
		path     string // relative to the task root
		lands    bool
		denied   bool   // listed in permission_denials
		toolCode string // the Write's tool_result code
		inReason string
	}{
		{"default asks, so denied", "default", "new.txt", false, true, "permission.denied", "--allowed-tools"},
		{"no mode given runs default", "", "new.txt", false, true, "permission.denied", "Nobody is available"},
		{"acceptEdits writes inside the root", "acceptEdits", "src/new.txt", true, false, "", ""},
		{"acceptEdits asks for a shell rc file", "acceptEdits", ".bashrc", false, true, "permission.denied", "protected"},
		{"acceptEdits asks for .git", "acceptEdits", ".git/config", false, true, "permission.denied", "protected"},
		{"acceptEdits refuses outside the root", "acceptEdits", "../outside.txt", false, false, "fs.path_not_in_root", ""},
		{"bypassPermissions writes a shell rc file", "bypassPermissions", ".bashrc", true, false, "", ""},
		{"bypassPermissions writes .git", "bypassPermissions", ".git/config", true, false, "", ""},
		{"bypassPermissions opens the write face", "bypassPermissions", "../outside.txt", true, false, "", ""},
		{"plan denies writes", "plan", "new.txt", false, true, "permission.denied", ""},
		{"dontAsk denies what it would ask", "dontAsk", "new.txt", false, true, "permission.denied", "dontAsk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			root := filepath.Join(parent, "ws")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			script := scriptOf(t, writeOf(c.path, "written by the model\n"))
			args := []string{"run", "--cwd", root, "--model", "scripted/" + script, "--on-ask", "deny"}
			if c.mode != "" {
				args = append(args, "--permission-mode", c.mode)
			}
			o := semaStream(t, parent, nil, "", append(args, "write it")...)
			if o.code != 0 || o.final["status"] != "completed" || o.final["result"] != "finished" {
				t.Fatalf("exit %d, result %v\nstderr: %s", o.code, o.final, o.stderr)
			}
			if got := exists(filepath.Join(root, c.path)); got != c.lands {
				t.Fatalf("file landed=%v, want %v", got, c.lands)
			}
			ds := o.denials()
			if c.denied {
				if len(ds) != 1 || ds[0]["tool"] != "Write" || ds[0]["code"] != "permission.denied" ||
					ds[0]["input"].(map[string]any)["file_path"] != c.path || !strings.Contains(ds[0]["reason"].(string), c.inReason) {
					t.Fatalf("denials %v; want the Write, with %q", ds, c.inReason)
				}
			} else if len(ds) != 0 {
				t.Fatalf("denials %v; want none", ds)
			}
			trs := o.toolResults()
			if len(trs) != 1 || trs[0]["is_error"] != (c.toolCode != "") || c.toolCode != "" && trs[0]["code"] != c.toolCode {
				t.Fatalf("tool results %v; want code %q", trs, c.toolCode)
			}
			want := c.mode
			if want == "" {
				want = "default"
			}
			if rc := modeReceipt(t, o.final); rc["requested"] != c.mode || rc["effective"] != want {
				t.Fatalf("mode receipt %v; want requested %q, effective %q", rc, c.mode, want)
			}
		})
	}
}

// TestRuleFlags: deny rules win in every mode, bypassPermissions included; allow rules
// answer the ordinary question but never a person-only one.
func TestRuleFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		flags  []string
		calls  []toolCall
		lands  []string // files that must exist afterwards
		absent []string // files that must not
		denied []string // tools denied, in order
	}{
		{"disallowed Read in bypassPermissions",
			[]string{"--permission-mode", "bypassPermissions", "--disallowed-tools", "Read"},
			[]toolCall{{"Read", map[string]any{"file_path": "a.txt"}}}, nil, nil, []string{"Read"}},
		{"disallowed path in bypassPermissions",
			[]string{"--permission-mode", "bypassPermissions", "--disallowed-tools", "Write(secret/**)"},
			[]toolCall{writeOf("secret/key", "k"), writeOf("public.txt", "p")}, []string{"public.txt"}, []string{"secret/key"}, []string{"Write"}},
		{"allowed Write in default",
			[]string{"--allowed-tools", "Write"},
			[]toolCall{writeOf("new.txt", "n")}, []string{"new.txt"}, nil, nil},
		{"allowed Write under src, several rules in one value",
			[]string{"--allowed-tools", "Read,Write(src/**)"},
			[]toolCall{writeOf("src/a.go", "package a\n"), writeOf("b.txt", "b")}, []string{"src/a.go"}, []string{"b.txt"}, []string{"Write"}},
		{"an allow rule does not answer a protected path",
			[]string{"--allowed-tools", "Write"},
			[]toolCall{writeOf(".bashrc", "alias x=y\n")}, nil, []string{".bashrc"}, []string{"Write"}},
		{"repeated flags add up",
			[]string{"--allowed-tools", "Write(a/**)", "--allowed-tools", "Write(b/**)"},
			[]toolCall{writeOf("a/1", "1"), writeOf("b/2", "2"), writeOf("c/3", "3")}, []string{"a/1", "b/2"}, []string{"c/3"}, []string{"Write"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
			args := append([]string{"run", "--model", "scripted/" + scriptOf(t, c.calls...)}, c.flags...)
			o := semaStream(t, dir, nil, "", append(args, "go")...)
			if o.code != 0 || o.final["result"] != "finished" {
				t.Fatalf("exit %d, result %v\nstderr: %s", o.code, o.final, o.stderr)
			}
			for _, f := range c.lands {
				if !exists(filepath.Join(dir, f)) {
					t.Errorf("%s did not land", f)
				}
			}
			for _, f := range c.absent {
				if exists(filepath.Join(dir, f)) {
					t.Errorf("%s landed", f)
				}
			}
			var denied []string
			for _, d := range o.denials() {
				denied = append(denied, d["tool"].(string))
			}
			if strings.Join(denied, ",") != strings.Join(c.denied, ",") {
				t.Fatalf("denied %v, want %v: %v", denied, c.denied, o.denials())
			}
		})
	}
}

// TestPermissionUsageErrors: every refused flag exits 2 and names the code and the
// offending value.
func TestPermissionUsageErrors(t *testing.T) {
	t.Parallel()
	script := scriptOf(t)
	dir := t.TempDir()
	unknownKey := filepath.Join(dir, "unknown.json")
	os.WriteFile(unknownKey, []byte(`{"permissions":{"allow":["Read"],"additionalDirectory":["/"]}}`), 0o644)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"bad allow rule", []string{"--allowed-tools", "Read,Edit(src/**"}, []string{"config.rule_invalid", "Edit(src/**"}},
		{"bad deny rule", []string{"--disallowed-tools", "Read)"}, []string{"config.rule_invalid", "Read)"}},
		{"mode words are case-sensitive", []string{"--permission-mode", "Plan"}, []string{"config.permission_mode_invalid", "Plan"}},
		{"missing settings file", []string{"--settings", filepath.Join(dir, "none.json")}, []string{"config.settings_invalid", "none.json"}},
		{"unknown settings key", []string{"--settings", unknownKey}, []string{"config.spec_unknown_key", "additionalDirectory"}},
		{"unknown input format", []string{"--input-format", "xml"}, []string{"config.input_format_invalid", "xml"}},
		{"stream-json input needs stream-json output", []string{"--input-format", "stream-json"}, []string{"config.input_format_invalid"}},
		{"bad --on-ask", []string{"--on-ask", "maybe"}, []string{"config.on_ask_invalid", "maybe"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"run", "--model", "scripted/" + script}, c.args...)
			r := sema(t, t.TempDir(), nil, "", append(args, "go")...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstderr: %s", r.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, r.stderr)
				}
			}
		})
	}
	// The prompt from stdin and answers from stdin cannot share it.
	r := sema(t, t.TempDir(), nil, "go\n", "run", "--model", "scripted/"+script, "--on-ask", "prompt", "-")
	if r.code != 2 || !strings.Contains(r.stderr, "config.stdin_conflict") {
		t.Fatalf("exit %d stderr %s", r.code, r.stderr)
	}
}

// TestSettingsFiles: the --settings file, the user's ~/.sema/settings.json, the
// project's .sema/settings.json and .sema/settings.local.json each add rules; the mode
// comes from the flag, else the highest layer's defaultMode: --settings, then the local
// file, the project file, the user file. A workspace's own files grant only when it is
// trusted (--trust-project).
func TestSettingsFiles(t *testing.T) {
	t.Parallel()
	trust := []string{"--trust-project"}
	cases := []struct {
		name      string
		flagFile  string // content of the --settings file; "" for none
		userFile  string // content of $HOME/.sema/settings.json; "" for none
		project   string // content of .sema/settings.json in the root; "" for none
		local     string // content of .sema/settings.local.json in the root; "" for none
		flags     []string
		requested string
		lands     bool // whether the Write of out/new.txt lands
	}{
		{"settings deny beats bypassPermissions", `{"permissions":{"deny":["Write(out/**)"]}}`, "", "", "",
			[]string{"--permission-mode", "bypassPermissions"}, "bypassPermissions", false},
		{"settings allow", `{"permissions":{"allow":["Write(out/**)"]}}`, "", "", "", nil, "", true},
		{"settings defaultMode", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", "", "", nil, "acceptEdits", true},
		{"the flag beats the settings file", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", "", "",
			[]string{"--permission-mode", "plan"}, "plan", false},
		{"user file defaultMode", "", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", "", nil, "acceptEdits", true},
		{"the settings file beats the user file", `{"permissions":{"defaultMode":"dontAsk"}}`, `{"permissions":{"defaultMode":"acceptEdits"}}`, "", "",
			nil, "dontAsk", false},
		{"user deny applies under another file's mode", `{"permissions":{"defaultMode":"bypassPermissions"}}`, `{"permissions":{"deny":["Write"]}}`, "", "",
			nil, "bypassPermissions", false},
		{"a trusted project's allow", "", "", `{"permissions":{"allow":["Write"]}}`, "", trust, "", true},
		{"an untrusted project's allow does not apply", "", "", `{"permissions":{"allow":["Write"]}}`, "", nil, "", false},
		{"an untrusted project's deny applies", `{"permissions":{"allow":["Write"]}}`, "", `{"permissions":{"deny":["Write(out/**)"]}}`, "", nil, "", false},
		{"project defaultMode", "", "", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", trust, "acceptEdits", true},
		{"an untrusted project's defaultMode does not apply", "", "", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", nil, "", false},
		{"the project file beats the user file", "", `{"permissions":{"defaultMode":"plan"}}`, `{"permissions":{"defaultMode":"acceptEdits"}}`, "",
			trust, "acceptEdits", true},
		{"the local file beats the project file", "", "", `{"permissions":{"defaultMode":"acceptEdits"}}`, `{"permissions":{"defaultMode":"plan"}}`,
			trust, "plan", false},
		{"the settings file beats the local file", `{"permissions":{"defaultMode":"acceptEdits"}}`, "", "", `{"permissions":{"defaultMode":"plan"}}`,
			trust, "acceptEdits", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"README.md": "hi\n"}
			if c.project != "" {
				files[".sema/settings.json"] = c.project
			}
			if c.local != "" {
				files[".sema/settings.local.json"] = c.local
			}
			root := writeTree(t, files)
			home := t.TempDir()
			args := []string{"run", "--model", "scripted/" + scriptOf(t, writeOf("out/new.txt", "x"))}
			if c.flagFile != "" {
				p := filepath.Join(t.TempDir(), "settings.json")
				os.WriteFile(p, []byte(c.flagFile), 0o644)
				args = append(args, "--settings", p)
			}
			if c.userFile != "" {
				os.MkdirAll(filepath.Join(home, ".sema"), 0o755)
				os.WriteFile(filepath.Join(home, ".sema", "settings.json"), []byte(c.userFile), 0o644)
			}
			args = append(append(args, c.flags...), "go")
			o := semaStream(t, root, []string{"HOME=" + home}, "", args...)
			if o.code != 0 || o.final["result"] != "finished" {
				t.Fatalf("exit %d, result %v\nstderr: %s", o.code, o.final, o.stderr)
			}
			if rc := modeReceipt(t, o.final); rc["requested"] != c.requested {
				t.Fatalf("mode receipt %v, want requested %q", rc, c.requested)
			}
			if got := exists(filepath.Join(root, "out/new.txt")); got != c.lands {
				t.Fatalf("landed=%v, want %v; denials %v", got, c.lands, o.denials())
			}
		})
	}
}

// TestPromptReadsAnswersFromStdin: with --on-ask prompt the questions go to stderr and
// the answers come from stdin, terminal or not.
func TestPromptReadsAnswersFromStdin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		mode     string
		answers  string
		calls    []toolCall
		lands    []string
		absent   []string
		asked    int      // questions put
		inStderr []string // what the person saw
		inDenial string   // in the first denial's reason
	}{
		{"yes, then no", "default", "y\nn\n", []toolCall{writeOf("a.txt", "a\n"), writeOf("b.txt", "b\n")},
			[]string{"a.txt"}, []string{"b.txt"}, 2, []string{"Write a.txt", "│ a", "Allow? [y]es once / [a]lways for this session / [n]o:"}, "answered no"},
		{"always covers the same file", "default", "a\n", []toolCall{writeOf("a.txt", "one\n"), writeOf("a.txt", "two\n")},
			[]string{"a.txt"}, nil, 1, []string{"will not be asked again", `allowed (you answered "always" earlier)`}, ""},
		{"a protected path is asked every time", "acceptEdits", "a\n", []toolCall{writeOf(".bashrc", "x\n")},
			[]string{".bashrc"}, nil, 1, []string{"[n]o (asked every time)", "allowed once"}, ""},
		{"the end of the input denies", "default", "", []toolCall{writeOf("a.txt", "a\n")},
			nil, []string{"a.txt"}, 1, []string{"no answer"}, "input ended"},
		{"an answer that is not one denies", "default", "sure\n", []toolCall{writeOf("a.txt", "a\n")},
			nil, []string{"a.txt"}, 1, []string{`"sure" is not an answer`}, "not y, a or n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			o := semaStream(t, dir, nil, c.answers, "run", "--model", "scripted/"+scriptOf(t, c.calls...),
				"--permission-mode", c.mode, "--on-ask", "prompt", "go")
			if o.code != 0 || o.final["result"] != "finished" {
				t.Fatalf("exit %d, result %v\nstderr: %s", o.code, o.final, o.stderr)
			}
			for _, f := range c.lands {
				if !exists(filepath.Join(dir, f)) {
					t.Errorf("%s did not land", f)
				}
			}
			for _, f := range c.absent {
				if exists(filepath.Join(dir, f)) {
					t.Errorf("%s landed", f)
				}
			}
			if n := strings.Count(o.stderr, "Allow? "); n != c.asked {
				t.Errorf("%d questions, want %d:\n%s", n, c.asked, o.stderr)
			}
			for _, w := range c.inStderr {
				if !strings.Contains(o.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, o.stderr)
				}
			}
			ds := o.denials()
			if c.inDenial == "" && len(ds) != 0 || c.inDenial != "" && (len(ds) == 0 || !strings.Contains(ds[0]["reason"].(string), c.inDenial)) {
				t.Fatalf("denials %v, want one with %q", ds, c.inDenial)
			}
			if strings.Contains(o.stdout, "Allow?") {
				t.Errorf("a question reached stdout")
			}
		})
	}
}

// gatedAnthropic is a fake Anthropic API whose first request waits until open is
// called: a test can make sure something happened before the model's first answer.
// A relay in front of the fake holds the request, then forwards it and hands back the
// fake's whole answer.
func gatedAnthropic(t *testing.T, turns ...anthropictest.Turn) (env []string, open func()) {
	t.Helper()
	srv := anthropictest.NewServer(t, turns...)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, srv.URL()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		req.Header.Del("Accept-Encoding") // the answer is relayed as the fake wrote it
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range resp.Header {
			if k != "Content-Length" {
				w.Header()[k] = vs
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	t.Cleanup(front.Close)
	t.Cleanup(open) // runs before front.Close: nothing is left waiting
	return []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + front.URL}, open
}

// TestSteerFromStdin: with --input-format stream-json, control lines on stdin change the
// running leg's mode and are answered on stdout. The model's first answer (a Write) is
// held until every control line was answered, so the Write meets the steered mode.
func TestSteerFromStdin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		start   string
		steerTo string
		lands   bool
	}{
		{"default steered to bypassPermissions", "default", "bypassPermissions", true},
		{"acceptEdits steered to plan", "acceptEdits", "plan", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env, open := gatedAnthropic(t,
				anthropictest.Turn{Text: "writing", ToolCalls: []anthropictest.ToolCall{{Name: "Write", Input: `{"file_path":"steered.txt","content":"hi\n"}`}}},
				anthropictest.Turn{Text: "finished"},
			)
			controls := []string{
				`{"type":"control","subtype":"interrupt","request_id":"c1"}`,
				`{"type":"control","subtype":"set_permission_mode","mode":"Plan","request_id":"c2"}`,
				`not json`,
				`{"type":"control","subtype":"set_permission_mode","mode":"` + c.steerTo + `","request_id":"c3"}`,
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, semaBin, "run", "--model", "anthropic/claude-sonnet-4-5", "--permission-mode", c.start,
				"--input-format", "stream-json", "--output-format", "stream-json", "write it")
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
			cmd.Stdin = strings.NewReader(strings.Join(controls, "\n") + "\n") // then EOF: the run goes on
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var events []map[string]any
			var responses []map[string]any
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
			for sc.Scan() {
				var ev map[string]any
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("line is not JSON: %v\n%s", err, sc.Text())
				}
				events = append(events, ev)
				if ev["type"] == "control_response" {
					responses = append(responses, ev)
					if len(responses) == len(controls) {
						open()
					}
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("sema: %v\nstderr: %s", err, stderr.String())
			}
			if len(events) == 0 || events[0]["type"] != "system" || events[len(events)-1]["type"] != "result" {
				t.Fatalf("the stream must open with init and close with the result: %v", events)
			}
			if len(responses) != len(controls) {
				t.Fatalf("%d control responses, want %d", len(responses), len(controls))
			}
			code := func(r map[string]any) any {
				e, _ := r["error"].(map[string]any)
				return e["code"]
			}
			if responses[0]["request_id"] != "c1" || code(responses[0]) != "control.unknown" {
				t.Errorf("unknown subtype: %v", responses[0])
			}
			if responses[1]["request_id"] != "c2" || code(responses[1]) != "config.permission_mode_invalid" {
				t.Errorf("bad mode: %v", responses[1])
			}
			if code(responses[2]) != "control.malformed" {
				t.Errorf("not JSON: %v", responses[2])
			}
			want := map[string]any{"requested": c.steerTo, "effective": c.steerTo}
			if got, _ := responses[3]["receipt"].(map[string]any); responses[3]["request_id"] != "c3" || responses[3]["subtype"] != "set_permission_mode" ||
				got["requested"] != want["requested"] || got["effective"] != want["effective"] || responses[3]["error"] != nil {
				t.Fatalf("steer response %v, want receipt %v", responses[3], want)
			}
			if got := exists(filepath.Join(dir, "steered.txt")); got != c.lands {
				t.Fatalf("the Write landed=%v, want %v; stream: %v", got, c.lands, events)
			}
			if final := events[len(events)-1]; final["status"] != "completed" || final["result"] != "finished" {
				t.Fatalf("result %v", final)
			}
		})
	}
}

// TestPermissionEventsOnStreamJSON: a question is a permission event (subtype question,
// who answered and how), and the refusal that follows keeps its own shape.
func TestPermissionEventsOnStreamJSON(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	script := scriptOf(t, writeOf("new.txt", "written by the model\n"))
	o := semaStream(t, root, nil, "", "run", "--cwd", root, "--model", "scripted/"+script, "--on-ask", "deny", "write it")
	if o.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", o.code, o.stderr)
	}
	var perms []map[string]any
	for _, e := range o.events {
		if e["type"] == "permission" {
			perms = append(perms, e)
		}
	}
	if len(perms) != 2 {
		t.Fatalf("permission events %v; want the question, then the refusal", perms)
	}
	q, d := perms[0], perms[1]
	if q["subtype"] != "question" || q["tool"] != "Write" || q["answered_by"] != "none" || q["behavior"] != "deny" ||
		q["gate"] != "tool_permission" || q["message"] == "" || q["input"].(map[string]any)["file_path"] != "new.txt" {
		t.Fatalf("question event %v", q)
	}
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "code,input,reason,tool,turn,type" || d["code"] != "permission.denied" || d["tool"] != "Write" {
		t.Fatalf("refusal event %v", d)
	}
}
