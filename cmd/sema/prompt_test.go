package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// fakeTTY is a reader or writer that says it is a terminal of the given width.
type fakeTTY struct {
	io.Reader
	bytes.Buffer
	width int
}

func (f *fakeTTY) terminalWidth() (int, bool) { return f.width, true }
func (f *fakeTTY) Read(p []byte) (int, error) {
	if f.Reader == nil {
		return 0, io.EOF
	}
	return f.Reader.Read(p)
}

// promptWorld is a workspace, a state directory and a scripted model that answers "done",
// with HOME pointing at an empty directory.
type promptWorld struct {
	root, state, model string
}

func newPromptWorld(t *testing.T) promptWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("SEMA_HOME", "")
	t.Setenv("SEMA_MODEL", "")
	w := promptWorld{root: filepath.Join(base, "root"), state: filepath.Join(base, "state")}
	os.MkdirAll(w.root, 0o755)
	w.model = "scripted/" + writeFile(t, filepath.Join(base, "script.json"), `{"turns":[{"text":"done"}]}`)
	return w
}

// run runs sema in-process; args go after the command word (run, or -p) with the
// world's flags.
func (w promptWorld) run(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	full := append([]string{args[0], "--cwd", w.root, "--home", w.state, "--sandbox", "off", "--model", w.model}, args[1:]...)
	var out, errw bytes.Buffer
	code := run(context.Background(), full, stdin, &out, &errw)
	return code, out.String(), errw.String()
}

// prompt runs sema with JSON output and returns the prompt the session recorded.
func (w promptWorld) prompt(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	code, out, errs := w.run(t, stdin, append(args, "--output-format", "json")...)
	if code != exitOK {
		t.Fatalf("sema %q: exit %d\nstdout %s\nstderr %s", args, code, out, errs)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	st, err := openHome(context.Background(), w.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chain, err := st.Sessions().Transcript(context.Background(), res.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range chain {
		if e.Kind == "user" {
			var m model.Message
			if err := json.Unmarshal(e.Payload, &m); err != nil {
				t.Fatal(err)
			}
			return textOf(m.Content)
		}
	}
	t.Fatalf("no prompt in the transcript of %s", res.SessionID)
	return ""
}

// The prompt comes from the argument, from piped stdin, or from both (the argument first,
// the piped text after a blank line); stdin is left alone when it is a terminal or
// carries something else.
func TestPromptFromStdin(t *testing.T) {
	w := newPromptWorld(t)
	writeFile(t, filepath.Join(w.root, ".sema", "commands", "fix.md"), "EXPANDED $ARGUMENTS")
	cases := []struct {
		name  string
		stdin io.Reader
		args  []string
		want  string
	}{
		{"piped, no argument", strings.NewReader("explain this\n"), []string{"-p"}, "explain this\n"},
		{"piped, no argument, run", strings.NewReader("explain this"), []string{"run"}, "explain this"},
		{"dash reads stdin", strings.NewReader("from stdin"), []string{"run", "-"}, "from stdin"},
		{"piped after the argument", strings.NewReader("line1\nline2\n"), []string{"-p", "summarize"}, "summarize\n\nline1\nline2"},
		{"an empty pipe adds nothing", strings.NewReader(""), []string{"-p", "summarize"}, "summarize"},
		{"a byte-order mark is dropped", strings.NewReader("\ufeffdata"), []string{"run", "look"}, "look\n\ndata"},
		{"flags between -p and the prompt", strings.NewReader(""), []string{"-p", "--max-turns", "3", "quoted prompt"}, "quoted prompt"},
		{"a terminal is not read", &fakeTTY{Reader: strings.NewReader("typed ahead")}, []string{"-p", "alone"}, "alone"},
		{"--on-ask prompt keeps stdin for answers", strings.NewReader("y\n"), []string{"-p", "alone", "--on-ask", "prompt"}, "alone"},
		{"a command's name typed, piped text after its expansion", strings.NewReader("data\n"), []string{"-p", "/fix 12"}, "EXPANDED 12\n\ndata"},
		{"a prompt read from stdin is never a command", strings.NewReader("/fix 12"), []string{"-p"}, "/fix 12"},
		{"nor with -", strings.NewReader("/fix 12"), []string{"run", "-"}, "/fix 12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := w.prompt(t, c.stdin, c.args...); got != c.want {
				t.Fatalf("prompt %q, want %q", got, c.want)
			}
		})
	}
}

// With --input-format stream-json stdin carries control lines: it is not the prompt's.
func TestPromptStdinCarriesControlLines(t *testing.T) {
	w := newPromptWorld(t)
	code, out, errs := w.run(t, strings.NewReader(""), "-p", "alone", "--input-format", "stream-json", "--output-format", "stream-json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = w.run(t, strings.NewReader("text\n"), "run", "--input-format", "stream-json", "--output-format", "stream-json")
	if code != exitUsage || !strings.Contains(errs, "(config.stdin_conflict)") || !strings.Contains(errs, "the prompt is an argument") {
		t.Fatalf("no prompt with stream-json input: exit %d\n%s\n%s", code, out, errs)
	}
}

// A prompt read from stdin is refused, with a code and what to do, when it is too large,
// not UTF-8, or missing.
func TestPromptStdinRefusals(t *testing.T) {
	w := newPromptWorld(t)
	big := io.MultiReader(strings.NewReader("summarize "), io.LimitReader(repeatByte('a'), maxStdinPrompt))
	cases := []struct {
		name   string
		stdin  io.Reader
		args   []string
		code   string
		advice string
	}{
		{"too large", big, []string{"-p"}, codeStdinTooLarge, "save it in the workspace"},
		{"too large after an argument", io.LimitReader(repeatByte('a'), maxStdinPrompt+1), []string{"-p", "x"}, codeStdinTooLarge, "more than 10 MiB"},
		{"not UTF-8", strings.NewReader("ok \xff\xfe"), []string{"-p", "x"}, codeStdinNotUTF8, "byte 3 is not"},
		{"empty", strings.NewReader(" \n"), []string{"-p"}, codeUsage, "no prompt: stdin was empty"},
		{"a terminal and no argument", &fakeTTY{}, []string{"run"}, codeUsage, `no prompt: give one as an argument, sema run "explain this repo", or pipe it in`},
		{"a terminal and no argument, -p", &fakeTTY{}, []string{"-p"}, codeUsage, `sema -p "explain this repo"`},
		{"answers on stdin and no argument", strings.NewReader("y\n"), []string{"-p", "--on-ask", "prompt"}, codeStdinConflict, "the prompt is an argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := w.run(t, c.stdin, c.args...)
			if code != exitUsage || !strings.Contains(errs, "("+c.code+")") || !strings.Contains(errs, c.advice) {
				t.Fatalf("exit %d, stderr %q; want exit 2, %s, %q", code, errs, c.code, c.advice)
			}
			if out != "" {
				t.Fatalf("stdout %q", out)
			}
		})
	}
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// A pipe nobody writes to is not waited for past the grace period when the prompt is an
// argument: the run goes on without it, and a notice says so.
func TestPromptStdinGrace(t *testing.T) {
	t.Parallel()
	r, pw := io.Pipe()
	defer pw.Close()
	var errw bytes.Buffer
	start := time.Now()
	prompt, piped, err := readPromptStdin("x", stdinAppend, r, &errw, 20*time.Millisecond)
	if err != nil || prompt != "x" || piped != "" {
		t.Fatalf("got %q %q %v", prompt, piped, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("waited for the pipe")
	}
	if !strings.Contains(errw.String(), "(cli.stdin_ignored)") || !strings.Contains(errw.String(), "</dev/null") {
		t.Fatalf("notice %q", errw.String())
	}

	// Text that starts within the grace period is read to its end, however long it takes.
	r2, pw2 := io.Pipe()
	go func() {
		pw2.Write([]byte("first "))
		time.Sleep(50 * time.Millisecond)
		pw2.Write([]byte("second"))
		pw2.Close()
	}()
	errw.Reset()
	_, piped, err = readPromptStdin("x", stdinAppend, r2, &errw, 5*time.Second)
	if err != nil || piped != "first second" || errw.Len() != 0 {
		t.Fatalf("got %q %v, stderr %q", piped, err, errw.String())
	}
}

func TestWithPiped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ prompt, piped, want string }{
		{"explain", "a\nb\n", "explain\n\na\nb"},
		{"explain\n", "a\r\n", "explain\n\na"},
		{"explain", "", "explain"},
		{"explain", "\n \n", "explain"},
		{"", "a\n", "a"},
	} {
		if got := withPiped(c.prompt, c.piped); got != c.want {
			t.Errorf("withPiped(%q, %q) = %q, want %q", c.prompt, c.piped, got, c.want)
		}
	}
}

func TestReadStdinTextReportsTheFirstBadByte(t *testing.T) {
	t.Parallel()
	_, err := readStdinText(strings.NewReader("héllo\xc3"))
	var se *sema.Error
	if !errors.As(err, &se) || se.Code != codeStdinNotUTF8 || se.Detail["offset"] != 6 {
		t.Fatalf("%v", err)
	}
}

// `echo "fix it" | sema` runs the piped text as the prompt, as `sema -p` does; with
// nothing piped (a terminal, or a device at its end: </dev/null) `sema` shows its help and
// exits 0; a pipe or a file that gave nothing is refused as `sema -p` refuses it.
func TestPipedPromptWithoutPrint(t *testing.T) {
	w := newPromptWorld(t)
	flags := []string{"--cwd", w.root, "--home", w.state, "--sandbox", "off", "--model", w.model}
	var out, errw bytes.Buffer
	code := run(context.Background(), append(flags, "--output-format", "json"), strings.NewReader("fix it\n"), &out, &errw)
	if code != exitOK {
		t.Fatalf("echo 'fix it' | sema: exit %d\nstdout %s\nstderr %s", code, out.String(), errw.String())
	}
	var res struct {
		Type   string `json:"type"`
		Result string `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Type != "result" || res.Result != "done" {
		t.Fatalf("echo 'fix it' | sema printed %q (%v), want the run's result", out.String(), err)
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for name, stdin := range map[string]io.Reader{"a terminal": &fakeTTY{Reader: strings.NewReader("typed ahead")}, "/dev/null": devNull} {
		out.Reset()
		errw.Reset()
		if code := run(context.Background(), flags, stdin, &out, &errw); code != exitOK || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("sema with %s: exit %d, want the help\nstdout %s\nstderr %s", name, code, out.String(), errw.String())
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pw.Close() // the producer printed nothing
	defer pr.Close()
	empty, err := os.Open(writeFile(t, filepath.Join(t.TempDir(), "prompt.txt"), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	for name, stdin := range map[string]*os.File{"an empty pipe": pr, "an empty file": empty} {
		out.Reset()
		errw.Reset()
		if code := run(context.Background(), flags, stdin, &out, &errw); code != exitUsage || out.Len() != 0 ||
			!strings.Contains(errw.String(), "no prompt: stdin was empty") || !strings.Contains(errw.String(), "("+codeUsage+")") {
			t.Errorf("sema with %s: exit %d, want %d and the empty stdin refused\nstdout %s\nstderr %s", name, code, exitUsage, out.String(), errw.String())
		}
	}
}
