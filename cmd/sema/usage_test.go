package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sema-agent/sema"
)

// Every refused command line exits 2 with a code and says what to write instead.
func TestUsageErrorsAreCodedAndSayWhatToDo(t *testing.T) {
	w := newPromptWorld(t)
	file := writeFile(t, filepath.Join(w.root, "notes.txt"), "x")
	missing := filepath.Join(w.root, "no-such-dir")
	cases := []struct {
		args   []string
		stdin  io.Reader
		code   string
		advice string
	}{
		{args: []string{"run", "fix", "the", "bug"}, code: codeUsage, advice: `quote the prompt: sema run "fix the bug"`},
		{args: []string{"-p", "fix", "the", "bug"}, code: codeUsage, advice: `quote the prompt: sema -p "fix the bug"`},
		{args: []string{"run", "--model", "x/y", "say", `"hi"`}, code: codeUsage, advice: `quote the prompt: sema run "say \"hi\""`},
		{args: []string{"hello"}, code: codeUsage, advice: "did you mean `sema run \"hello\"` or `sema -p \"hello\"`?"},
		{args: []string{"fix", "the", "bug"}, code: codeUsage, advice: "did you mean `sema run \"fix the bug\"` or `sema -p \"fix the bug\"`?"},
		{args: []string{"--model", "x/y", "hello"}, code: codeUsage, advice: "did you mean `sema run \"hello\"`"},
		{args: []string{"sesions"}, code: codeUsage, advice: "did you mean `sema sessions`?"},
		{args: []string{"sessions", "bogus"}, code: codeUsage, advice: `sema sessions has no subcommand "bogus"; use one of: list,`},
		{args: []string{"sessions", "lst"}, code: codeUsage, advice: "did you mean `sema sessions list`?"},
		{args: []string{"mcp", "bogus"}, code: codeUsage, advice: `sema mcp has no subcommand "bogus"; use one of: get, list`},
		{args: []string{"commands", "bogus"}, code: codeUsage, advice: `sema commands has no subcommand "bogus"; use one of: list`},
		{args: []string{"trust", "a", "b"}, code: codeUsage, advice: "see `sema trust --help`"},
		{args: []string{"sessions", "list", "extra"}, code: codeUsage, advice: "see `sema sessions list --help`"},
		{args: []string{"run", "--no-such-flag", "x"}, code: codeUsage, advice: "unknown flag: --no-such-flag; see `sema run --help`"},
		{args: []string{"--print=hello"}, code: codeUsage, advice: "see `sema --help`"},
		{args: []string{"run", "--cwd", missing, "--settings", missing + ".json", "x"}, code: codeRootInvalid, advice: "no such directory; give the directory the task works in"},
		{args: []string{"run", "--cwd", file, "--settings", missing + ".json", "x"}, code: codeRootInvalid, advice: "is a file, not a directory"},
		{args: []string{"-p", "--cwd", file, "x"}, code: codeRootInvalid, advice: "--cwd " + w.root},
		{args: []string{"mcp", "list", "--cwd", missing}, code: codeRootInvalid, advice: "no such directory"},
		{args: []string{"commands", "list", "--cwd", file}, code: codeRootInvalid, advice: "is a file"},
		{args: []string{"approve", "s1", "--checkpoint", "c", "--allow", "--resume", "s2"}, code: codeUsage, advice: "sema approve does not take --resume: it continues the session it names"},
		{args: []string{"approve", "s1", "--checkpoint", "c", "--allow", "--deny"}, code: codeUsage, advice: "--allow and --deny both answer the question; give one"},
		{args: []string{"help", "bogus"}, code: codeUsage, advice: `sema has no subcommand "bogus"; use one of: acp, approve`},
		{args: []string{"completion", "bogus"}, code: codeUsage, advice: "use one of: bash, fish, powershell, zsh"},
		{args: []string{"permissions", "--cwd", missing}, code: codeRootInvalid, advice: "no such directory; give the directory the task works in"},
		{args: []string{"permissions", "check"}, code: codeUsage, advice: "write it as: sema permissions check 'Bash(git push origin main)'"},
		{args: []string{"run"}, stdin: &fakeTTY{}, code: codeUsage, advice: `or pipe it in: git diff | sema run "review this"`},
		{args: []string{"run", "--max-turns", "abc", "x"}, code: codeUsage, advice: `--max-turns takes a whole number, not "abc"; see ` + "`sema run --help`"},
		{args: []string{"-p", "--max-budget-usd", "lots", "x"}, code: codeUsage, advice: `--max-budget-usd takes a number, not "lots"`},
		{args: []string{"run", "--read-only=maybe", "x"}, code: codeUsage, advice: `--read-only takes true or false, not "maybe"`},
		// A bad limit is named before the model is looked for (this world names none).
		{args: []string{"run", "--max-turns", "-3", "x"}, code: "config.max_turns_invalid", advice: "--max-turns is -3; give a positive number"},
		{args: []string{"-p", "--max-tokens-total", "-1", "x"}, code: "config.max_tokens_total_invalid", advice: "--max-tokens-total is -1"},
		{args: []string{"run", "--max-budget-usd", "-0.5", "x"}, code: "config.max_budget_invalid", advice: "--max-budget-usd is -0.5"},
	}
	for _, c := range cases {
		stdin := c.stdin
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		var out, errw bytes.Buffer
		code := run(context.Background(), c.args, stdin, &out, &errw)
		if code != exitUsage || !strings.Contains(errw.String(), "("+c.code+")") || !strings.Contains(errw.String(), c.advice) {
			t.Errorf("sema %q: exit %d, stderr %q; want exit 2, %s, %q", c.args, code, errw.String(), c.code, c.advice)
		}
		if out.Len() != 0 {
			t.Errorf("sema %q: stdout %q", c.args, out.String())
		}
		if strings.Contains(errw.String(), "strconv.") {
			t.Errorf("sema %q: the refusal speaks the parser's words: %q", c.args, errw.String())
		}
	}
}

// A program that asked for JSON finds the refusal of an unknown word as one object.
func TestUnknownCommandUnderJSONOutput(t *testing.T) {
	t.Parallel()
	var out, errw bytes.Buffer
	code := run(context.Background(), []string{"--output-format", "json", "hello"}, strings.NewReader(""), &out, &errw)
	var obj struct {
		Type  string      `json:"type"`
		Error *sema.Error `json:"error"`
	}
	if code != exitUsage || json.Unmarshal(out.Bytes(), &obj) != nil || obj.Error == nil || obj.Error.Code != codeUsage {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

// A group given no subcommand shows its help and exits 0, as `sema` alone does.
func TestGroupAloneShowsHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"sessions"}, {"mcp"}, {"commands"}} {
		var out, errw bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errw)
		if code != exitOK || !strings.Contains(out.String(), "Usage:") || errw.Len() != 0 {
			t.Errorf("sema %q: exit %d, stdout %q, stderr %q", args, code, out.String(), errw.String())
		}
	}
}

// Flags that mean nothing for a command are not in its help.
func TestHelpShowsOnlyFlagsThatApply(t *testing.T) {
	t.Parallel()
	help := func(args ...string) string {
		var out, errw bytes.Buffer
		if code := run(context.Background(), append(args, "--help"), strings.NewReader(""), &out, &errw); code != exitOK {
			t.Fatalf("sema %q --help: exit %d, %s", args, code, errw.String())
		}
		return out.String()
	}
	approve := help("approve")
	for _, f := range []string{"--resume", "--continue"} {
		if strings.Contains(approve, f+" ") {
			t.Errorf("sema approve --help lists %s", f)
		}
	}
	for _, f := range []string{"--checkpoint", "--verbose", "--cwd"} {
		if !strings.Contains(approve, f) {
			t.Errorf("sema approve --help does not list %s", f)
		}
	}
	if strings.Contains(approve, "with --resume/--continue") {
		t.Errorf("sema approve --help describes a flag by --resume or --continue, which it refuses:\n%s", approve)
	}
	if root := help(); !strings.Contains(root, "-p, --print") || !strings.Contains(root, "--verbose") {
		t.Errorf("sema --help: %s", root)
	}
	if r := help("run"); strings.Contains(r, "--print") || !strings.Contains(r, "--verbose") {
		t.Errorf("sema run --help: %s", r)
	}
}

// At a terminal one argument that is not a command is the interactive session's first
// prompt; several words are refused with the quoting that makes them one, and a word
// close to a command's name is refused as a typo rather than sent to the model.
func TestRootArgsAtATerminal(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	var print, interactive bool
	for _, tc := range []struct {
		args     []string
		terminal bool
		refusal  string // "" when the arguments are taken
	}{
		{[]string{"explain this repo"}, true, ""},
		{[]string{"hello"}, true, ""},
		{[]string{"fix", "the", "bug"}, true, `quote it: sema "fix the bug"`},
		{[]string{"sesions"}, true, "did you mean `sema sessions`?"},
		{[]string{"sesions", "list"}, true, "did you mean `sema sessions`?"},
		{[]string{"explain this repo"}, false, "did you mean `sema run \"explain this repo\"`"},
		{nil, false, ""},
	} {
		err := rootArgs(&print, &interactive, func() bool { return tc.terminal })(root, tc.args)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%q (terminal %v): refused: %v", tc.args, tc.terminal, err)
		case tc.refusal != "" && (err == nil || !sema.IsCode(err, codeUsage) || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%q (terminal %v): %v; want %s refusal saying %q", tc.args, tc.terminal, err, codeUsage, tc.refusal)
		}
	}
}

// TestRunTreeIsTheWholeTreesRun: `sema run …` is executed by a tree holding run alone
// (commandTree); run's help, its flag refusals and its argument refusals read exactly as
// they do in the whole tree.
func TestRunTreeIsTheWholeTreesRun(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--help"},
		{"run", "--no-such-flag", "x"},
		{"run", "--permission-mode", "sideways", "x"},
		{"run", "--max-turns", "many", "x"},
		{"run", "a", "b"},
		{"run", "--cwd", "/no/such/dir/anywhere", "x"},
	} {
		outcome := func(root *cobra.Command) string {
			var out, errw bytes.Buffer
			root.SetArgs(args)
			root.SetIn(strings.NewReader(""))
			root.SetOut(&out)
			root.SetErr(&errw)
			err := root.ExecuteContext(t.Context())
			return fmt.Sprintf("err=%v\nstdout=%s\nstderr=%s", err, out.String(), errw.String())
		}
		whole := outcome(newRootCmd(strings.NewReader(""), io.Discard, io.Discard))
		alone := outcome(commandTree(strings.NewReader(""), io.Discard, io.Discard, args))
		if whole != alone {
			t.Errorf("%v:\nthe whole tree: %s\nrun alone: %s", args, whole, alone)
		}
		if len(commandTree(strings.NewReader(""), io.Discard, io.Discard, args).Commands()) != 1 {
			t.Fatalf("%v: the tree holds more than run", args)
		}
	}
}

// A word flag given empty — `--sandbox "$MODE"` with MODE unset — is refused with the
// flag's own code instead of running as if it had been left out. Calibrated: each flag
// with a word it takes runs, so the refusal is the empty value's, not the flag's.
func TestEmptyWordFlagsAreRefused(t *testing.T) {
	w := newPromptWorld(t)
	valid := map[string]string{
		"permission-mode": "default", "sandbox": "off", "sandbox-network": "off", "file-history": "on",
		"on-ask": "deny", "input-format": "text", "model": w.model,
	}
	for name, flag := range wordFlags {
		for _, form := range [][]string{{"--" + name + "="}, {"--" + name, ""}} {
			code, _, stderr := w.run(t, strings.NewReader(""), append(append([]string{"run"}, form...), "say hi")...)
			if code != exitUsage || !strings.Contains(stderr, "("+flag.code+")") || !strings.Contains(stderr, "--"+name+" was given an empty value") {
				t.Errorf("sema run %q: exit %d, stderr %q; want exit %d and %s", form, code, stderr, exitUsage, flag.code)
			}
		}
		if name == "resume" {
			continue // a resumed session must exist; the calibration below is for the others
		}
		if code, _, stderr := w.run(t, strings.NewReader(""), "run", "--"+name, valid[name], "say hi"); code != exitOK {
			t.Errorf("sema run --%s %s: exit %d, stderr %q; the calibration needs it to run", name, valid[name], code, stderr)
		}
	}
	// The other commands that share a word flag refuse it the same way.
	for _, args := range [][]string{
		{"permissions", "--cwd", w.root, "--permission-mode=", "check", "Read(x)"},
		{"replay", "--sandbox=", "00000000-0000-4000-8000-000000000000"},
	} {
		var out, errw bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errw); code != exitUsage || !strings.Contains(errw.String(), "was given an empty value") {
			t.Errorf("sema %q: exit %d, stderr %q; want the empty value refused", args, code, errw.String())
		}
	}
}
