package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
)

// Codes of a prompt read from stdin that sema refuses.
const (
	codeStdinTooLarge = "cli.stdin_too_large"
	codeStdinNotUTF8  = "cli.stdin_not_utf8"
	// codeStdinIgnored is the notice that stdin, a pipe nobody wrote to, was not waited for.
	codeStdinIgnored = "cli.stdin_ignored"
)

// maxStdinPrompt bounds what is read from stdin for a prompt. A prompt is sent whole with
// every model request; text larger than this belongs in a file the model reads in parts.
const maxStdinPrompt = 10 << 20

// stdinGrace is how long a run with a prompt argument waits for the first byte of a
// stdin that is neither a terminal nor at its end: a program that started sema with an
// open pipe it never writes to (a supervisor, an editor, a CI step) must not wait forever.
// A prompt read from stdin alone (`sema -p` with no argument, or `-`) waits as long as
// it takes.
const stdinGrace = 3 * time.Second

// stdinUse is what a run reads from stdin for its prompt.
type stdinUse int

const (
	// stdinNone: stdin is not read for the prompt (a terminal, a pipe that carries
	// control lines or answers, or a command that takes no prompt).
	stdinNone stdinUse = iota
	// stdinAppend: the prompt is the argument, and what is piped in follows it.
	stdinAppend
)

// promptOf decides the prompt of `sema run ARGS` and `sema -p ARGS` and what stdin adds to
// it, as the familiar CLIs do:
//
//   - one argument is the prompt; when stdin is piped (not a terminal) and free, its text
//     is appended after a blank line (`git diff | sema -p "review this"`);
//   - no argument reads the whole prompt from a piped stdin (`echo "fix it" | sema -p`),
//     as the argument `-` does wherever stdin is;
//   - several arguments are a custom command's invocation when the first is /name.
//
// Stdin is free unless it is a terminal, carries control lines (--input-format
// stream-json) or carries the answers of --on-ask prompt; with a prompt argument it is
// then left alone, and with none the refusal says why. The returned prompt is "-" when
// it is to be read from stdin whole.
func promptOf(cmd *cobra.Command, args []string, o *runOptions, stdin io.Reader) (string, stdinUse, error) {
	tty := stdinTerminal(stdin)
	free := !tty && o.inputFormat != "stream-json" && o.onAsk != "prompt"
	if len(args) == 0 {
		example := cmd.CommandPath() + ` "explain this repo"`
		if cmd.Parent() == nil {
			example = `sema -p "explain this repo"`
		}
		switch {
		case o.inputFormat == "stream-json":
			return "", stdinNone, usageErr(sema.Errorf(codeStdinConflict, "no prompt: with --input-format stream-json stdin carries control lines, so the prompt is an argument: %s", example))
		case o.onAsk == "prompt":
			return "", stdinNone, usageErr(sema.Errorf(codeStdinConflict, "no prompt: --on-ask prompt reads its answers from stdin, so the prompt is an argument: %s", example))
		case tty:
			return "", stdinNone, usageErr(sema.Errorf(codeUsage, "no prompt: give one as an argument, %s, or pipe it in: git diff | %s \"review this\"", example, strings.TrimSuffix(example, ` "explain this repo"`)))
		}
		return "-", stdinNone, nil
	}
	prompt := runPrompt(args)
	if prompt != "-" && free {
		return prompt, stdinAppend, nil
	}
	return prompt, stdinNone, nil
}

// stdinTerminal reports whether stdin is a terminal a person types at (tests give a
// reader that says it is one).
func stdinTerminal(r io.Reader) bool {
	if t, ok := r.(terminal); ok {
		_, tty := t.terminalWidth()
		return tty
	}
	return isTerminal(r)
}

// readPromptStdin reads what stdin gives the prompt: for "-" the whole prompt (an empty
// one is refused), for stdinAppend the text that follows the argument, waiting at most
// grace for its first byte (a notice says when nothing came). It returns the prompt and
// the appended text ("" when none).
func readPromptStdin(prompt string, use stdinUse, stdin io.Reader, stderr io.Writer, grace time.Duration) (string, string, error) {
	switch {
	case prompt == "-":
		data, err := readStdinText(stdin)
		if err != nil {
			return "", "", err
		}
		if strings.TrimSpace(data) == "" {
			return "", "", usageErr(sema.Errorf(codeUsage, "no prompt: stdin was empty; give the prompt as an argument (sema -p \"…\") or pipe text in"))
		}
		return data, "", nil
	case use == stdinAppend:
		r, arrived := firstByteWithin(stdin, grace)
		if !arrived {
			notice(stderr, codeStdinIgnored, fmt.Sprintf("nothing arrived on stdin within %s; running with the argument alone (give stdin as </dev/null to skip the wait)", grace))
			return prompt, "", nil
		}
		data, err := readStdinText(r)
		if err != nil {
			return "", "", err
		}
		return prompt, data, nil
	}
	return prompt, "", nil
}

// withPiped is the prompt followed by the text piped into sema, after a blank line, so the
// model reads the instruction first and the material after it. A prompt with no piped
// text is unchanged.
func withPiped(prompt, piped string) string {
	piped = strings.TrimRight(piped, "\r\n")
	if strings.TrimSpace(piped) == "" {
		return prompt
	}
	if strings.TrimSpace(prompt) == "" {
		return piped
	}
	return strings.TrimRight(prompt, "\r\n") + "\n\n" + piped
}

// readStdinText reads at most maxStdinPrompt bytes of UTF-8 text (a byte-order mark is
// dropped); more, or bytes that are not UTF-8, are refused with a code.
func readStdinText(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxStdinPrompt+1))
	if err != nil {
		return "", usageErr(sema.Errorf(codeUsage, "cannot read the prompt from stdin: %v", err))
	}
	if len(data) > maxStdinPrompt {
		return "", usageErr(sema.Errorf(codeStdinTooLarge, "stdin holds more than %d MiB, too much for a prompt; save it in the workspace and name the file in the prompt (the model reads it in parts)", maxStdinPrompt>>20).
			With("limit_bytes", maxStdinPrompt))
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if !utf8.Valid(data) {
		at := invalidUTF8At(data)
		return "", usageErr(sema.Errorf(codeStdinNotUTF8, "stdin is not UTF-8 text (byte %d is not); convert it first (iconv -t UTF-8), or save it in the workspace and name the file in the prompt", at).
			With("offset", at))
	}
	return string(data), nil
}

// invalidUTF8At is the offset of the first byte of data that is not part of valid UTF-8.
func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// firstByteWithin waits up to grace for stdin's first read to return (data or its end)
// and then gives a reader of everything stdin has, that first read included. It reports
// false when the wait ran out: the read goes on in the background, and what it returns
// is dropped.
func firstByteWithin(r io.Reader, grace time.Duration) (io.Reader, bool) {
	type first struct {
		data []byte
		err  error
	}
	got := make(chan first, 1)
	go func() {
		buf := make([]byte, 32<<10)
		n, err := r.Read(buf)
		got <- first{buf[:n], err}
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case f := <-got:
		if f.err != nil {
			return io.MultiReader(bytes.NewReader(f.data), errReader{f.err}), true
		}
		return io.MultiReader(bytes.NewReader(f.data), r), true
	case <-timer.C:
		return nil, false
	}
}

// errReader returns err (io.EOF: the end) from every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// stdinPiped reports whether stdin is a pipe, a socket or a regular file (what a shell's
// `|` and `<` give), not a device such as /dev/null or a terminal. Only a file can say
// what it is: any other reader gives false, as a device does.
func stdinPiped(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 || fi.Mode().IsRegular()
}

// pipedPrompt is what `sema` with no -p and no argument reads: a stdin that is not a
// terminal and holds text. It waits for stdin's first read (data or its end) and returns
// a reader of everything stdin has, that read included; false when stdin is a terminal
// or ends at once (</dev/null, or a pipe or file with nothing in it: stdinPiped tells
// them apart).
func pipedPrompt(stdin io.Reader) (io.Reader, bool) {
	if stdin == nil || stdinTerminal(stdin) {
		return nil, false
	}
	buf := make([]byte, 32<<10)
	n, err := stdin.Read(buf)
	for n == 0 && err == nil {
		n, err = stdin.Read(buf)
	}
	if n == 0 {
		return nil, false
	}
	if err != nil {
		return io.MultiReader(bytes.NewReader(buf[:n]), errReader{err}), true
	}
	return io.MultiReader(bytes.NewReader(buf[:n]), stdin), true
}
